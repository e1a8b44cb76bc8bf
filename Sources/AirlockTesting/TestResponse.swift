/// What a `.respond` origin answers. The origin adds the framing field (Content-Length, or
/// Transfer-Encoding: chunked) unless `headers` already has Content-Length or Transfer-Encoding,
/// and adds `Connection: close` when it will close unless `headers` already has a Connection field.
public struct TestResponse: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// `patternBytes(count:)`, generated and written 64 KiB at a time.
        case pattern(count: Int)
        /// A file streamed from disk 64 KiB at a time.
        case file(String)
    }

    public var status: Int
    public var reason: String
    public var headers: [(String, String)]
    public var body: Body
    /// Frame the body as chunked (one chunk per 64 KiB write) instead of Content-Length.
    public var chunked: Bool
    /// Send `Connection: close` and close the connection after this response.
    public var close: Bool

    public init(status: Int = 200, reason: String = "OK", headers: [(String, String)] = [], body: Body = .bytes([]),
                chunked: Bool = false, close: Bool = false) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.chunked = chunked
        self.close = close
    }

    public static func ok(_ text: String, contentType: String = "text/plain") -> TestResponse {
        TestResponse(headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }

    /// A body-less response with the given status, e.g. `.status(503, "Service Unavailable")`.
    public static func status(_ status: Int, _ reason: String, headers: [(String, String)] = []) -> TestResponse {
        TestResponse(status: status, reason: reason, headers: headers)
    }
}
