import AirlockSession
import AirlockWire

/// A request's id: unique per process run ("<random prefix>-<worker>-<serial in hex>"), or the
/// client's own `X-Request-Id` when it sent exactly one well-formed one (`RequestIDSyntax`).
/// Airlock's own ids are kept as numbers until something prints them; the header goes out
/// through `HeadWriter` with no String built (`write(into:)`).
struct RequestID: Sendable, CustomStringConvertible {
    let prefix: String
    let worker: Int
    let serial: UInt64
    /// The client's id, kept as sent.
    var client: String?

    var description: String { client ?? "\(prefix)-\(worker)-\(String(serial, radix: 16))" }

    /// "X-Request-Id: <id>\r\n": the client's id, or Airlock's from `ownPrefix` (the worker's
    /// "X-Request-Id: <prefix>-<worker>-") and `serial`.
    static func write(serial: UInt64, client: String?, ownPrefix: HeadWriter.FieldPrefix, into w: inout HeadWriter) {
        if let client {
            w.field("X-Request-Id", value: client)
        } else {
            w.field(ownPrefix, hex: serial)
        }
    }

    /// The client's id when `headers` hold exactly one `X-Request-Id` and it is well-formed;
    /// nil otherwise (none, several, or a bad one: Airlock's id replaces it).
    static func clientID(in headers: HTTPHeaders) -> String? {
        var found: Int?
        for i in 0..<headers.count where headers.known(at: i) == .requestID {
            if found != nil { return nil }
            found = i
        }
        guard let i = found, headers.withValueBytes(at: i, { RequestIDSyntax.isWellFormed($0) }) else { return nil }
        return headers.value(at: i)
    }
}
