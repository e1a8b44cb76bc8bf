/// Identifies a pool of interchangeable upstream connections: same scheme, host and port
/// (and, once TLS arrives, the same security policy).
public struct UpstreamKey: Hashable, Sendable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    public var port: UInt16
    /// For TLS upstreams, the identity of the trust policy: connections are shared only
    /// between requests that trust the same servers.
    public var trust: String

    public init(scheme: String, host: String, port: UInt16, trust: String = "") {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.trust = trust
    }

    public var description: String { "\(scheme)://\(host):\(port)" }
}
