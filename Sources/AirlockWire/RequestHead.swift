/// A parsed and validated request head.
public struct RequestHead: Sendable {
    public var method: Method
    public var target: RequestTarget
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// `.none`, `.length(n)` or `.chunked`; never `.closeDelimited`.
    public var framing: BodyFraming
    /// Effective authority host, lower-cased, IPv6 in brackets. For absolute- and authority-form
    /// it comes from the target (the target wins over Host); otherwise from Host. "" for an
    /// HTTP/1.0 request without Host.
    public var host: String
    /// Effective port, if one was given.
    public var port: UInt16?
    /// HTTP/1.1: unless `Connection: close`; HTTP/1.0: only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// `Expect: 100-continue` on an HTTP/1.1 request (ignored in HTTP/1.0, RFC 9110 10.1.1).
    public var expectsContinue: Bool

    public init(
        method: Method, target: RequestTarget, version: HTTPVersion = .http11, headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none, host: String, port: UInt16? = nil, keepAlive: Bool = true,
        expectsContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.framing = framing
        self.host = host
        self.port = port
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }
}
