public enum StreamEvent: Sendable, Equatable {
    case connected
    case eof
    case error(String)
    case readTimeout
    case writeTimeout
    /// The TLS handshake failed (OpenSSL's reason).
    case tlsFailed(String)
}
