/// How a CONNECT tunnel ended: the `tunnel` field of its access record and the `end` label of
/// `airlock_tunnels_total` (bounded values).
public enum TunnelEnd: String, Sendable, Equatable, CaseIterable {
    /// Both sides sent EOF and everything each sent reached the other.
    case closed = "closed"
    /// The upstream could not be resolved or reached: the client got a JSON error, never a 200.
    case connectFailed = "connect-failed"
    /// The client's connection failed (reset, write error) or it went away while connecting.
    case clientError = "client-error"
    /// The upstream's connection failed after the 200.
    case upstreamError = "upstream-error"
    /// No byte from either side for `limits.tunnel_idle_timeout`.
    case idleTimeout = "idle-timeout"
    /// The gateway was draining and the drain timeout passed.
    case drainTimeout = "drain-timeout"
    /// An admin cancelled it (`DELETE /tasks`).
    case cancelled = "cancelled"

    /// Whether the tunnel ended the way a tunnel should (both sides closed in turn).
    public var isClean: Bool { self == .closed }
}
