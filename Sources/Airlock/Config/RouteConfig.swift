/// One entry of `routes`: which requests it takes and where they go.
public struct RouteConfig: Sendable, Equatable {
    /// Unique, `[A-Za-z0-9._-]{1,64}`: it is used as a metric label.
    public var name: String
    public var host: HostPattern
    /// When set, the route takes only paths that start with it (plain string prefix).
    public var pathPrefix: String?
    public var upstream: Upstream
    /// Trust for TLS upstreams (https fixed upstreams, absolute https:// requests on origin routes).
    public var security: RouteSecurity

    public init(name: String, host: HostPattern, pathPrefix: String? = nil, upstream: Upstream,
                security: RouteSecurity = .default) {
        self.name = name
        self.host = host
        self.pathPrefix = pathPrefix
        self.upstream = upstream
        self.security = security
    }

    /// Whether this route takes a request for `host` (lowercase, no port) and `path`.
    public func matches(host: String, path: String) -> Bool {
        guard self.host.matches(host) else { return false }
        guard let prefix = pathPrefix else { return true }
        return path.utf8.starts(with: prefix.utf8)
    }
}
