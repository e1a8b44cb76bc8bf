/// What a route pins, spelled as in the configuration (`pinning:`). AFSecurityPolicy's
/// `AFSSLPinningMode`.
public enum PinningMode: String, Sendable, CaseIterable {
    /// No pinning: the chain must validate against default trust.
    case none
    /// Some certificate in the chain must carry one of the pinned SPKI SHA-256 digests.
    case publicKey = "public-key"
    /// The pinned certificates are the only trust anchors, and one of them must be in the chain.
    case certificate
}
