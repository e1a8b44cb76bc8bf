/// A parsed and validated response head.
public struct ResponseHead: Sendable {
    public var version: HTTPVersion
    /// Exactly three digits, 100...999, on the wire.
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
    /// HTTP/1.1: unless `Connection: close`; HTTP/1.0: only with `Connection: keep-alive`.
    /// A close-delimited body ends the connection regardless; see `framing(requestMethod:)`.
    public var keepAlive: Bool
    /// What the headers declared: `.chunked`, `.length(n)` or `.closeDelimited`. Fixed at parse
    /// time, so editing `headers` afterwards does not change how the body is read.
    public var declaredFraming: BodyFraming

    public init(
        version: HTTPVersion = .http11, status: Int, reason: String, headers: HTTPHeaders = HTTPHeaders(),
        keepAlive: Bool = true, declaredFraming: BodyFraming = .closeDelimited
    ) {
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
        self.keepAlive = keepAlive
        self.declaredFraming = declaredFraming
    }

    /// Framing of this response's body given the request method (RFC 9112 6.3): HEAD, 1xx, 204,
    /// 304 and a 2xx to CONNECT (the connection becomes a tunnel) → `.none`; otherwise chunked →
    /// `.chunked`, Content-Length → `.length`, else `.closeDelimited`.
    public func framing(requestMethod: Method) -> BodyFraming {
        if requestMethod == .head || (100...199).contains(status) || status == 204 || status == 304 {
            return .none
        }
        if requestMethod == .connect && (200...299).contains(status) {
            return .none
        }
        return declaredFraming
    }

    /// True when the response is interim (1xx) and a final response still follows. 101 is final.
    public var isInformational: Bool { (100...199).contains(status) && status != 101 }
}
