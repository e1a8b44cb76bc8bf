/// Which trust anchors an X509 verification run by the TLS layer uses.
public enum TrustAnchors: Sendable, Hashable {
    /// The system store plus the route's `ca:` bundle.
    case defaultTrust
    /// Only the policy's `pinnedCertificates` (certificate mode).
    case pinnedCertificates
    /// None: the chain as presented is checked against the route's security level only (key sizes,
    /// signature digests), not for trust, dates or names. For public-key pinning with
    /// `allow_invalid_certificates`, where nothing else looks at the chain: a pin does not excuse a
    /// weak key.
    case presentedChain
}
