/// Where a route sends its requests.
public enum Upstream: Sendable, Equatable, CustomStringConvertible {
    /// Forward proxy: connect to the host the client named.
    case origin
    /// Gateway: send every request of the route to this origin.
    case fixed(UpstreamTarget)

    /// `origin` or the URL, as written in the config.
    public var description: String {
        switch self {
        case .origin: return "origin"
        case .fixed(let target): return target.description
        }
    }
}
