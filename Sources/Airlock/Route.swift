import AirlockConfig
import AirlockSecurity
import AirlockSerialization
import AirlockSession

/// A configured route as the request path uses it: the `RouteConfig`, shared by reference
/// (an exchange holds one pointer, not a copy of every field), plus what a fixed upstream
/// lets us work out once instead of per request: its pool key and its `Host` value.
final class Route: Sendable {
    let config: RouteConfig
    /// The pool key of a fixed upstream; nil for `origin` routes (the key depends on the request).
    let fixedKey: UpstreamKey?
    /// The `Host` field sent to a fixed upstream (IPv6 literals in brackets, port only when
    /// not the scheme's default).
    let fixedHostField: String?
    /// The route's metric handles, resolved once (nil only in tests that build bare routes).
    let metrics: RouteMetrics?
    /// The fixed upstream's reachability, shared by every worker (nil for `origin` routes).
    let health: UpstreamHealth?
    /// The route's request serializer (its `request:` block), built once; nil: the canonical
    /// re-encoding alone.
    let requestSerializer: HTTPRequestSerializer?
    /// `request.timeout` and `request.throttle`, read once: the per-request path checks these
    /// plain optionals instead of reaching into the configuration's `request` block.
    let exchangeTimeout: Duration?
    let throttle: RequestSerializationConfig.Throttle?
    /// The egress policy in force (`RouteConfig.effectiveEgress`): every address this route
    /// dials is checked against it first.
    let egress: EgressPolicy

    init(_ config: RouteConfig, metrics: RouteMetrics? = nil, health: UpstreamHealth? = nil,
         egress: EgressPolicy? = nil) {
        self.config = config
        self.egress = egress ?? config.egress
        self.metrics = metrics
        self.health = health
        self.requestSerializer = config.request.map(HTTPRequestSerializer.init(config:))
        self.exchangeTimeout = config.request?.timeout
        self.throttle = config.request?.throttle
        switch config.upstream {
        case .fixed(let t):
            fixedKey = UpstreamKey(scheme: t.scheme, host: t.host, port: t.port,
                                   trust: t.scheme == "https" ? config.security.trustIdentity : "")
            fixedHostField = t.authority
        case .origin:
            fixedKey = nil
            fixedHostField = nil
        }
    }

    /// Routes in configuration order; the first that matches takes the request.
    static func table(_ config: AirlockConfig, metrics: GatewayMetrics? = nil, health: Reachabilities? = nil) -> [Route] {
        config.routes.enumerated().map { i, r in
            Route(r, metrics: metrics?.routes[i], health: health?.byRoute[i], egress: r.effectiveEgress(listen: config.listen))
        }
    }
}

extension Array where Element == Route {
    func first(host: String, path: String, port: UInt16? = nil) -> Route? {
        first { $0.config.matches(host: host, path: path, port: port) }
    }

    /// The route a `CONNECT host:port` goes by (`RouteConfig.matchesConnect`).
    func first(connectHost host: String, port: UInt16) -> Route? {
        first { $0.config.matchesConnect(host: host, port: port) }
    }
}
