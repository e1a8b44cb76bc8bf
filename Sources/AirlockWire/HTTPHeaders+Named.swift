extension HTTPHeaders {
    /// Every value of the field with this name (ignoring ASCII case), in order: for fields that
    /// are not a `KnownField` (`Cache-Control`, `Vary`, `ETag`, …).
    public func values(name: String) -> [String] {
        indices(name: name).map { value(at: $0) }
    }

    /// The comma-separated elements of every field with this name, OWS-trimmed, empty ones
    /// dropped, case kept (`Vary: Accept-Encoding, Origin` → `["Accept-Encoding", "Origin"]`).
    public func listElements(name: String) -> [String] {
        var out: [String] = []
        for i in indices(name: name) {
            withValueBytes(at: i) { value in
                _ = ByteClass.forEachListElement(value) { element in
                    if !element.isEmpty { out.append(String(decoding: element, as: UTF8.self)) }
                    return true
                }
            }
        }
        return out
    }

    private func indices(name: String) -> [Int] {
        var name = name
        return name.withUTF8 { wanted in
            let wanted = UnsafeRawBufferPointer(wanted)
            return (0..<count).filter { i in withNameBytes(at: i) { ByteClass.equalsIgnoringCase($0, wanted) } }
        }
    }
}

extension HTTPHeaders {
    /// Calls `body(field, n)` for every field whose name is `names[n]` (all lower-case),
    /// ignoring ASCII case, in field order: several names found in one pass over the fields,
    /// each compared only with the names of its length (a response's `Expires` and
    /// `Last-Modified` read together, where a search per name walked every field each time).
    public func forEachField(named names: [StaticString], _ body: (_ field: Int, _ name: Int) -> Void) {
        storage.withUnsafeBytes { all in
            for i in entries.indices {
                let e = entries[i]
                for n in names.indices where names[n].utf8CodeUnitCount == Int(e.nameCount) {
                    let name = UnsafeRawBufferPointer(rebasing: all[Int(e.nameStart)..<Int(e.nameStart + e.nameCount)])
                    if ByteClass.equalsLowercased(name, names[n]) {
                        body(i, n)
                        break
                    }
                }
            }
        }
    }

    /// Index of the first field named `lowered` (all lower-case), ignoring ASCII case: `firstIndex(name:)`
    /// for a name known when compiling, compared only with names of its length.
    public func firstIndex(lowercased lowered: StaticString) -> Int? {
        storage.withUnsafeBytes { all in
            for i in entries.indices where Int(entries[i].nameCount) == lowered.utf8CodeUnitCount {
                let e = entries[i]
                if ByteClass.equalsLowercased(UnsafeRawBufferPointer(rebasing: all[Int(e.nameStart)..<Int(e.nameStart + e.nameCount)]), lowered) {
                    return i
                }
            }
            return nil
        }
    }

    /// The first non-empty comma-separated element of the fields named `name` (all lower-case),
    /// OWS-trimmed, case kept: `listElements(name:).first` without building the list (and no
    /// String at all when there is none).
    public func firstListElement(name: StaticString) -> String? {
        var found: String?
        forEachField(named: [name]) { i, _ in
            guard found == nil else { return }
            withValueBytes(at: i) { value in
                _ = ByteClass.forEachListElement(value) { element in
                    guard !element.isEmpty else { return true }
                    found = String(decoding: element, as: UTF8.self)
                    return false
                }
            }
        }
        return found
    }
}
