/// The `X-Request-Id` field of a forwarded head: which client id is kept (`clientID(in:)`) and
/// how the field is written (`write`), the client's id or Airlock's own, with no String built
/// for Airlock's.
public enum RequestIDField {
    /// "X-Request-Id: <id>\r\n": the client's id, or Airlock's from `ownPrefix` (the worker's
    /// "X-Request-Id: <prefix>-<worker>-") and `serial` in hex.
    @inlinable
    public static func write(serial: UInt64, client: String?, ownPrefix: HeadWriter.FieldPrefix, into w: inout HeadWriter) {
        if let client {
            w.field("X-Request-Id", value: client)
        } else {
            w.field(ownPrefix, hex: serial)
        }
    }

    /// The client's id when `headers` hold exactly one `X-Request-Id` and it is well-formed
    /// (`RequestIDSyntax`); nil otherwise (none, several, or a bad one: Airlock's id replaces it).
    public static func clientID(in headers: HTTPHeaders) -> String? {
        var found: Int?
        for i in 0..<headers.count where headers.known(at: i) == .requestID {
            if found != nil { return nil }
            found = i
        }
        guard let i = found, headers.withValueBytes(at: i, { RequestIDSyntax.isWellFormed($0) }) else { return nil }
        return headers.value(at: i)
    }
}
