/// A request's id: unique per process run ("<random prefix>-<worker>-<serial in hex>").
/// Kept as numbers until something prints it.
struct RequestID: Sendable, CustomStringConvertible {
    let prefix: String
    let worker: Int
    let serial: UInt64

    var description: String { "\(prefix)-\(worker)-\(String(serial, radix: 16))" }
}
