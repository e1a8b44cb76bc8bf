import Glibc

/// Errors of the I/O layer: a stable code plus the errno text where there is one.
public struct IOError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case bind = "bind-failed"
        case listen = "listen-failed"
        case resolve = "resolve-failed"
        case connect = "connect-failed"
        case socket = "socket-failed"
        case tls = "tls-failed"
        case ioUring = "io-uring-unavailable"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    static func errno(_ code: Code, _ what: String) -> IOError {
        IOError(code, "\(what): \(String(cString: strerror(Glibc.errno)))")
    }

    public var description: String { "\(code.rawValue): \(detail)" }
}
