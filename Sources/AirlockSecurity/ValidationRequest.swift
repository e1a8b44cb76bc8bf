/// One X509 verification the TLS layer must run before the policy can decide: the chain the
/// server sent, against `anchors`, always checking validity dates, and checking the name when
/// `hostname` is set.
public struct ValidationRequest: Sendable, Hashable {
    public var anchors: TrustAnchors
    /// The name to check (DNS name or IP literal, as the route gives it); nil: don't check the name.
    public var hostname: String?

    public init(anchors: TrustAnchors, hostname: String?) {
        self.anchors = anchors
        self.hostname = hostname
    }
}
