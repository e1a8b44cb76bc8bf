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
        return entries.withUnsafeBufferPointer { fields in
            storage.withUnsafeBytes { all in
                guard let base = all.baseAddress else { return nil }
                for i in 0..<fields.count where Int(fields[i].nameCount) == lowered.utf8CodeUnitCount
                    && Self.nameEquals(base + Int(fields[i].nameStart), lowered) {
                    return i
                }
                return nil
            }
        }
    }
}
