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
        /// The local CA's certificate file: unreadable, not a certificate, not a CA.
        case caCertificate = "ca-certificate"
        /// The local CA's key file: unreadable, readable by others, not a key, not the certificate's.
        case caKey = "ca-key"
        /// A name a leaf certificate will not be minted for (not a DNS name or IP literal).
        case leafName = "leaf-name-refused"
        /// OpenSSL failed to build or sign a certificate.
        case mint = "mint-failed"
        /// A file that would be overwritten without being told to (`airlock ca init` without --force).
        case exists = "file-exists"
        /// A file that could not be written.
        case write = "write-failed"
    }

    public let code: Code
    public let detail: String
    /// The errno behind the failure, 0 when there is none.
    public let errnoValue: Int32

    public init(_ code: Code, _ detail: String, errno: Int32 = 0) {
        self.code = code
        self.detail = detail
        self.errnoValue = errno
    }

    static func errno(_ code: Code, _ what: String) -> IOError {
        let e = Glibc.errno
        return IOError(code, "\(what): \(String(cString: strerror(e)))", errno: e)
    }

    /// The process (EMFILE) or the system (ENFILE) has no descriptor left.
    public var isDescriptorExhaustion: Bool { errnoValue == EMFILE || errnoValue == ENFILE }

    public var description: String { "\(code.rawValue): \(detail)" }
}
