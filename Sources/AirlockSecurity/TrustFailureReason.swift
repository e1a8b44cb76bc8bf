/// Why a server was not trusted. Bounded, stable values: fit for a metric label or a log field.
public enum TrustFailureReason: String, Sendable, CaseIterable {
    case pinMismatch = "pin-mismatch"
    case untrustedChain = "untrusted-chain"
    case hostnameMismatch = "hostname-mismatch"
    case expired
    /// A certificate whose validity period has not begun (X509_V_ERR_CERT_NOT_YET_VALID).
    case notYetValid = "not-yet-valid"
    /// The chain is below the route's OpenSSL security level: a SHA-1 or MD5 signature under the
    /// anchor, or a key too small (RSA/DSA/DH < 2048 bits, ECC < 224 bits at the default level 2).
    case weakCertificate = "weak-certificate"
    case handshakeFailed = "handshake-failed"
}
