public import AirlockSecurity
public import AirlockSerialization

/// One entry of `routes`: which requests it takes and where they go.
public struct RouteConfig: Sendable, Equatable {
    /// Unique, `[A-Za-z0-9._-]{1,64}`: it is used as a metric label.
    public var name: String
    public var host: HostPattern
    /// When set, the route takes only paths that start with it (plain string prefix).
    public var pathPrefix: String?
    /// `match.port`: when set, the route takes only requests for this port (a CONNECT target's
    /// port, or the port of the Host field or absolute target, 80/443 by scheme when absent).
    public var port: UInt16?
    public var upstream: Upstream
    /// What a CONNECT request matching this route gets (`connect:`, default `deny`).
    public var connect: ConnectPolicy = .deny
    /// The ports a CONNECT may name (`connect_ports:`, default `[443]`); another is 403
    /// connect-port-denied.
    public var connectPorts: [UInt16] = RouteConfig.defaultConnectPorts
    /// `egress:`: the route's own `allow` and `deny` ranges (`denyInternal` is never set
    /// here: `effectiveEgress(listen:)` adds it from the listener and the upstream kind).
    public var egress = EgressPolicy()
    /// Trust for TLS upstreams (https fixed upstreams, absolute https:// requests on origin routes).
    public var security: RouteSecurity
    /// The `request:` block (issue #13); nil sends requests as the client wrote them. Accepted
    /// and validated at load; the request phase applies it.
    public var request: RequestSerializationConfig?
    /// The `response:` block; nil relays every response unchecked.
    public var response: ResponseValidationConfig? {
        didSet { validator = response?.makeValidator() }
    }
    /// Built once from `response`, so a request on a route without one costs a nil check.
    public private(set) var validator: (any ResponseValidator)?
    /// `resume:`: GET downloads cut mid-body continued with a range request (on by default).
    public var resume = ResumeConfig()
    /// `cache:`: the route's in-memory response cache; nil (the default) caches nothing.
    public var cache: CacheConfig?

    public init(name: String, host: HostPattern, pathPrefix: String? = nil, upstream: Upstream,
                security: RouteSecurity = .default, request: RequestSerializationConfig? = nil,
                response: ResponseValidationConfig? = nil) {
        self.name = name
        self.host = host
        self.pathPrefix = pathPrefix
        self.upstream = upstream
        self.security = security
        self.request = request
        self.response = response
        self.validator = response?.makeValidator()
    }

    /// Whether this route takes a request for `host` (lowercase, no port) and `path`
    /// (and `port`, when the route names one).
    public func matches(host: String, path: String, port: UInt16? = nil) -> Bool {
        guard self.host.matches(host) else { return false }
        if let want = self.port, let port, want != port { return false }
        guard let prefix = pathPrefix else { return true }
        return path.utf8.starts(with: prefix.utf8)
    }

    /// Whether this route takes `CONNECT host:port`: its host (and `match.port`, when set)
    /// match, and its match names no path other than `/` (a tunnel has no path).
    public func matchesConnect(host: String, port: UInt16) -> Bool {
        guard self.host.matches(host) else { return false }
        if let want = self.port, want != port { return false }
        return pathPrefix == nil || pathPrefix == "/"
    }

    /// The policy every address this route dials is checked against: its own ranges, and on a
    /// listener others can reach (not loopback), an `origin` route also refuses the
    /// special-purpose classes (loopback, private, link-local, …) unless `allow` names them.
    /// A fixed upstream is the operator's own choice, so only its lists apply.
    public func effectiveEgress(listen: ListenAddress) -> EgressPolicy {
        var policy = egress
        if case .origin = upstream { policy.denyInternal = !listen.isLoopback }
        return policy
    }

    /// The validator is derived from `response`, so it takes no part in equality.
    public static func == (a: RouteConfig, b: RouteConfig) -> Bool {
        a.name == b.name && a.host == b.host && a.pathPrefix == b.pathPrefix && a.port == b.port && a.upstream == b.upstream
            && a.connect == b.connect && a.connectPorts == b.connectPorts && a.egress == b.egress
            && a.security == b.security && a.request == b.request && a.response == b.response
            && a.resume == b.resume && a.cache == b.cache
    }
}
