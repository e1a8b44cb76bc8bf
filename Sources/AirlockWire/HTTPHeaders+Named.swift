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
