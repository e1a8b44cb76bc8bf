extension HTTPHeaders {
    /// Every value of the field with this name (ignoring ASCII case), in order: for fields that
    /// are not a `KnownField` (`Cache-Control`, `Vary`, `ETag`, …).
    public func values(name: String) -> [String] {
        var name = name
        return name.withUTF8 { wanted in
            let wanted = UnsafeRawBufferPointer(wanted)
            return (0..<count).filter { i in withNameBytes(at: i) { ByteClass.equalsIgnoringCase($0, wanted) } }
                .map { value(at: $0) }
        }
    }

    /// The comma-separated elements of every field with this name, OWS-trimmed, empty ones
    /// dropped, case kept (`Vary: Accept-Encoding, Origin` → `["Accept-Encoding", "Origin"]`).
    public func listElements(name: String) -> [String] {
        values(name: name).flatMap { value in
            value.split(separator: ",").map { $0.trimmingOWS() }.filter { !$0.isEmpty }
        }
    }
}

extension Substring {
    fileprivate func trimmingOWS() -> String {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
