/// The one error type of AirlockTesting: a kind a test can match on, and a message for the failure log.
public struct AirlockTestingError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        case timeout                 // a bounded wait ran out
        case closed                  // the peer closed before a whole message arrived
        case stopped                 // the owning origin or process was stopped while waiting
        case malformed               // bytes that are not the HTTP/1.1 the helper expected
        case system(errno: Int32)    // a POSIX call failed
        case process                 // a child process could not start, or exited early
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "AirlockTestingError.\(kind): \(message)" }
}
