/// How the end of a message body is found (RFC 9112 section 6.3).
public enum BodyFraming: Sendable, Equatable {
    /// No body.
    case none
    /// Exactly this many bytes follow the head.
    case length(UInt64)
    /// `Transfer-Encoding: chunked`.
    case chunked
    /// Responses only: the body runs until the connection closes.
    case closeDelimited
}
