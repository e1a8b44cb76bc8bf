/// Identifies a pool of interchangeable upstream connections: same scheme, host and port
/// (and, once TLS arrives, the same security policy).
public struct UpstreamKey: Hashable, Sendable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    public let port: UInt16
    /// For TLS upstreams, the identity of the trust policy: connections are shared only
    /// between requests that trust the same servers.
    public let trust: String
    /// Hashed once: the pool looks keys up on every exchange, and hashing four fields
    /// (three strings) each time cost more than the rest of a pool operation.
    @usableFromInline let precomputedHash: Int

    public init(scheme: String, host: String, port: UInt16, trust: String = "") {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.trust = trust
        var h = Hasher()
        h.combine(scheme)
        h.combine(host)
        h.combine(port)
        h.combine(trust)
        precomputedHash = h.finalize()
    }

    @inlinable
    public func hash(into hasher: inout Hasher) { hasher.combine(precomputedHash) }

    @inlinable
    public static func == (a: UpstreamKey, b: UpstreamKey) -> Bool {
        a.precomputedHash == b.precomputedHash && a.port == b.port && a.host == b.host
            && a.scheme == b.scheme && a.trust == b.trust
    }

    public var description: String { "\(scheme)://\(host):\(port)" }
}
