/// Which certificates of the chain may satisfy a pin (`pin_scope:`).
public enum PinScope: String, Sendable, CaseIterable {
    /// Any certificate of the chain: leaf, intermediate or anchor (AFNetworking's behaviour).
    case chain
    /// Only the leaf, the first certificate.
    case leaf
}
