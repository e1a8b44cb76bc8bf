public enum StreamEvent: Sendable, Equatable {
    case connected
    case eof
    case error(String)
    case readTimeout
    case writeTimeout
    /// The TLS handshake failed (OpenSSL's reason).
    case tlsFailed(String)

    /// The event as a log record's reason: the error text when it carries one.
    public var reason: String {
        switch self {
        case .error(let why), .tlsFailed(let why): why
        case .readTimeout: "read timeout"
        case .writeTimeout: "write timeout"
        case .eof: "closed by the peer"
        case .connected: "connected"
        }
    }
}
