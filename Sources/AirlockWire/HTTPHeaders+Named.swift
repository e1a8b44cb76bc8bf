extension HTTPHeaders {
    /// Every value of the field with this name (ignoring ASCII case), in order.
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
            let known = KnownField.classify(wanted)
            if known != .other {
                guard contains(known) else { return [] }
                return (0..<count).filter { self.known(at: $0) == known }
            }
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
        // The names' lengths as bits (all below 64): most fields are passed over on one test.
        var lengths: UInt64 = 0
        for name in names {
            precondition(name.utf8CodeUnitCount < 64, "forEachField(named:) takes names shorter than 64 bytes")
            lengths |= 1 << UInt64(name.utf8CodeUnitCount)
        }
        entries.withUnsafeBufferPointer { fields in
            storage.withUnsafeBytes { all in
                guard let base = all.baseAddress else { return }
                for i in 0..<fields.count where fields[i].nameCount < 64 && lengths & (1 << UInt64(fields[i].nameCount)) != 0 {
                    let e = fields[i]
                    for n in 0..<names.count where names[n].utf8CodeUnitCount == Int(e.nameCount)
                        && Self.nameEquals(base + Int(e.nameStart), names[n]) {
                        body(i, n)
                        break
                    }
                }
            }
        }
    }

    /// Whether the `lowered.utf8CodeUnitCount` bytes at `name` are `lowered`, ignoring ASCII case.
    @inline(__always)
    private static func nameEquals(_ name: UnsafeRawPointer, _ lowered: StaticString) -> Bool {
        let wanted = lowered.utf8Start
        for k in 0..<lowered.utf8CodeUnitCount where ByteClass.lower(name.load(fromByteOffset: k, as: UInt8.self)) != wanted[k] {
            return false
        }
        return true
    }

    /// Field `i`'s value read as an HTTP-date (RFC 9110 5.6.7), seconds since the epoch, parsed
    /// where it lies; nil when it is not one.
    public func date(at i: Int) -> Int64? {
        withValueBytes(at: i) { HTTPDate.parse($0) }
    }

    /// Index of the first field named `lowered` (all lower-case), ignoring ASCII case: `firstIndex(name:)`
    /// for a name known when compiling, compared only with names of its length.
    public func firstIndex(lowercased lowered: StaticString) -> Int? {
        let known = KnownField.classify(UnsafeRawBufferPointer(start: lowered.utf8Start, count: lowered.utf8CodeUnitCount))
        if known != .other { return firstIndex(known) }
        return firstIndex(lowercased: lowered, from: 0)
    }

    /// `firstIndex(lowercased:)` among the fields from `start` on.
    private func firstIndex(lowercased lowered: StaticString, from start: Int) -> Int? {
        entries.withUnsafeBufferPointer { fields in
            storage.withUnsafeBytes { all in
                guard let base = all.baseAddress, start < fields.count else { return nil }
                for i in start..<fields.count where Int(fields[i].nameCount) == lowered.utf8CodeUnitCount
                    && Self.nameEquals(base + Int(fields[i].nameStart), lowered) {
                    return i
                }
                return nil
            }
        }
    }

    /// The first non-empty comma-separated element of the fields named `name` (all lower-case),
    /// OWS-trimmed, case kept: `listElements(name:).first` without building the list (and no
    /// String at all when there is none).
    public func firstListElement(name: StaticString) -> String? {
        var found: String?
        var next = 0
        while found == nil, let i = firstIndex(lowercased: name, from: next) {
            withValueBytes(at: i) { value in
                _ = ByteClass.forEachListElement(value) { element in
                    guard !element.isEmpty else { return true }
                    found = String(decoding: element, as: UTF8.self)
                    return false
                }
            }
            next = i + 1
        }
        return found
    }
}
