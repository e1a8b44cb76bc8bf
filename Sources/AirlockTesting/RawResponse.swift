/// One response as `RawClient.readResponse` read it off the wire.
public struct RawResponse: Sendable {
    public var version: String
    public var status: Int
    public var reason: String
    public var headers: [(String, String)]
    /// The body, decoded from Content-Length or chunked framing, or everything until close.
    public var body: [UInt8]
    public var wasChunked: Bool
    /// Trailer fields of a chunked body.
    public var trailers: [(String, String)]
    /// The whole response exactly as received: head, framing and body.
    public var raw: [UInt8]

    public func header(_ name: String) -> String? {
        HTTPHead.first(name, in: headers.map { (name: $0.0, value: $0.1) })
    }

    /// Every field called `name`, case-insensitively, in order.
    public func headers(named name: String) -> [String] {
        headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
    }

    public var bodyString: String { String(decoding: body, as: UTF8.self) }
}
