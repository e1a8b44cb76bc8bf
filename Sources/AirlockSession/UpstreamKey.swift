/// Identifies a pool of interchangeable upstream connections: same scheme, host and port
/// (and, once TLS arrives, the same security policy).
public struct UpstreamKey: Hashable, Sendable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    public var port: UInt16

    public init(scheme: String, host: String, port: UInt16) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    public var description: String { "\(scheme)://\(host):\(port)" }
}
