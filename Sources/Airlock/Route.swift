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

    init(_ config: RouteConfig) {
        self.config = config
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
    static func table(_ config: AirlockConfig) -> [Route] { config.routes.map(Route.init) }
}

extension Array where Element == Route {
    func first(host: String, path: String) -> Route? {
        first { $0.config.matches(host: host, path: path) }
    }
}
