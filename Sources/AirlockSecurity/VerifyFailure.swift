/// Why an X509 verification failed, as the TLS layer reports it. The string is OpenSSL's
/// verify error text (`X509_verify_cert_error_string`).
public enum VerifyFailure: Sendable, Equatable, Error {
    case expired(String)
    case notYetValid(String)
    case hostnameMismatch(String)
    case untrusted(String)
    /// A key too small or a signature digest too weak for the security level.
    case weakCertificate(String)

    /// `X509_V_ERR_*` codes that have their own case.
    enum OpenSSLCode {
        static let certNotYetValid: Int32 = 9
        static let certHasExpired: Int32 = 10
        static let hostnameMismatch: Int32 = 62
        static let ipAddressMismatch: Int32 = 64
        static let eeKeyTooSmall: Int32 = 66
        static let caKeyTooSmall: Int32 = 67
        static let caMDTooWeak: Int32 = 68
    }

    /// Maps `X509_STORE_CTX_get_error`'s code: 10 -> expired, 9 -> notYetValid,
    /// 62 (hostname) and 64 (IP address) -> hostnameMismatch, 66 (EE key too small), 67 (CA key
    /// too small) and 68 (CA signature digest too weak) -> weakCertificate, anything else -> untrusted.
    public static func fromOpenSSL(code: Int32, text: String) -> VerifyFailure {
        switch code {
        case OpenSSLCode.certHasExpired: .expired(text)
        case OpenSSLCode.certNotYetValid: .notYetValid(text)
        case OpenSSLCode.hostnameMismatch, OpenSSLCode.ipAddressMismatch: .hostnameMismatch(text)
        case OpenSSLCode.eeKeyTooSmall, OpenSSLCode.caKeyTooSmall, OpenSSLCode.caMDTooWeak: .weakCertificate(text)
        default: .untrusted(text)
        }
    }

    /// OpenSSL's text.
    public var text: String {
        switch self {
        case .expired(let t), .notYetValid(let t), .hostnameMismatch(let t), .untrusted(let t), .weakCertificate(let t): t
        }
    }

    /// The trust failure this verification failure rejects a server with.
    public var reason: TrustFailureReason {
        switch self {
        case .expired: .expired
        case .notYetValid: .notYetValid
        case .hostnameMismatch: .hostnameMismatch
        case .untrusted: .untrustedChain
        case .weakCertificate: .weakCertificate
        }
    }
}

/// Outcome of one `ValidationRequest`: the chain as OpenSSL built it (leaf first, anchor last),
/// or why it failed.
public typealias ValidationOutcome = Result<[CertificateFacts], VerifyFailure>
