/// One request as a `TestOrigin` received it.
public struct TestRequest: Sendable {
    public var method: String
    public var target: String
    public var version: String
    /// Fields in the order received, names as spelled on the wire.
    public var headers: [(name: String, value: String)]
    /// The body, decoded from Content-Length or chunked framing.
    public var body: [UInt8]
    public var wasChunked: Bool
    /// Trailer fields of a chunked body, in order.
    public var trailers: [(name: String, value: String)]
    /// Which accepted connection (0-based, in accept order) carried this request.
    public var connectionIndex: Int
    /// The head exactly as received: request line, fields and the blank line.
    public var rawHead: String
    /// `rawHead` as bytes (no UTF-8 decoding), for byte-exact checks such as `RFC9112.requestHeadViolations`.
    public var rawHeadBytes: [UInt8] = []

    public init(method: String, target: String, version: String = "HTTP/1.1",
                headers: [(name: String, value: String)] = [], body: [UInt8] = [], wasChunked: Bool = false,
                trailers: [(name: String, value: String)] = [], connectionIndex: Int = 0, rawHead: String = "") {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.wasChunked = wasChunked
        self.trailers = trailers
        self.connectionIndex = connectionIndex
        self.rawHead = rawHead
    }

    /// The first field called `name`, case-insensitively.
    public func header(_ name: String) -> String? {
        HTTPHead.first(name, in: headers)
    }

    /// Every field called `name`, case-insensitively, in order.
    public func headers(named name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    public var bodyString: String { String(decoding: body, as: UTF8.self) }
}
