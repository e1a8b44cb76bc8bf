public import AirlockSerialization

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
    /// The `request:` block (issue #13); nil sends requests as the client wrote them. Accepted
    /// and validated at load; the request phase applies it.
    public var request: RequestSerializationConfig?
    /// The `response:` block; nil relays every response unchecked.
    public var response: ResponseValidationConfig? {
        didSet { validator = response?.makeValidator() }
    }
    /// Built once from `response`, so a request on a route without one costs a nil check.
    private(set) var validator: (any ResponseValidator)?

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

    /// Whether this route takes a request for `host` (lowercase, no port) and `path`.
    public func matches(host: String, path: String) -> Bool {
        guard self.host.matches(host) else { return false }
        guard let prefix = pathPrefix else { return true }
        return path.utf8.starts(with: prefix.utf8)
    }

    /// The validator is derived from `response`, so it takes no part in equality.
    public static func == (a: RouteConfig, b: RouteConfig) -> Bool {
        a.name == b.name && a.host == b.host && a.pathPrefix == b.pathPrefix && a.upstream == b.upstream
            && a.security == b.security && a.request == b.request && a.response == b.response
    }
}
