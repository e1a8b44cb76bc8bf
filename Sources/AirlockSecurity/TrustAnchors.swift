/// Which trust anchors an X509 verification run by the TLS layer uses.
public enum TrustAnchors: Sendable, Hashable {
    /// The system store plus the route's `ca:` bundle.
    case defaultTrust
    /// Only the policy's `pinnedCertificates` (certificate mode).
    case pinnedCertificates
}
