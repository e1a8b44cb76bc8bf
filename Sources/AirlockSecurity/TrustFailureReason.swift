/// Why a server was not trusted. Bounded, stable values: fit for a metric label or a log field.
public enum TrustFailureReason: String, Sendable, CaseIterable {
    case pinMismatch = "pin-mismatch"
    case untrustedChain = "untrusted-chain"
    case hostnameMismatch = "hostname-mismatch"
    case expired
    case handshakeFailed = "handshake-failed"
}
