/// A request's id: unique per process run ("<random prefix>-<worker>-<serial in hex>"), or the
/// client's own `X-Request-Id` when it sent exactly one well-formed one
/// (`RequestIDField.clientID(in:)`). Airlock's own ids are kept as numbers until something
/// prints them; the header goes out through `HeadWriter` with no String built
/// (`RequestIDField.write`, which spells it as `description` does).
struct RequestID: Sendable, CustomStringConvertible {
    let prefix: String
    let worker: Int
    let serial: UInt64
    /// The client's id, kept as sent.
    var client: String?

    var description: String { client ?? "\(prefix)-\(worker)-\(String(serial, radix: 16))" }
}
