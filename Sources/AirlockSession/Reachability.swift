/// One upstream's reachability (AFNetworkReachabilityManager's idea, for upstreams): a pure
/// state machine fed with active probe results and passive signals from real traffic, with the
/// time of each signal given to it (no clock of its own).
///
/// - A probe (TCP connect, plus the TLS handshake for https) decides at once either way.
/// - Passive: a connection that came up makes the upstream reachable; a refused connection
///   makes it unreachable at once (nothing listens); resets and timeouts count, and
///   `passiveFailureThreshold` of them in a row make it unreachable (one slow answer does not).
/// - While unreachable, only a successful probe or connection restores it.
/// - A probe whose TLS upstream fails the route's security policy (`probeUntrusted`) makes it
///   unreachable too, but its requests do not fail fast (`failsFast`): each still meets the
///   real handshake and is refused as untrusted, with its own reject record.
public struct Reachability: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        case unknown       // nothing observed yet → .reachable, .unreachable
        case reachable     // → .unreachable
        case unreachable   // → .reachable
    }

    public enum Signal: Sendable, Equatable {
        case probeSucceeded
        case probeFailed(String)
        /// The probe's TLS upstream failed the route's security policy.
        case probeUntrusted(String)
        /// A request's connection came up (and, for https, was trusted).
        case connected
        /// A request's connection was refused.
        case refused(String)
        /// A request's connection was reset or timed out.
        case failed(String)
    }

    /// A change of state: logged as `upstream.reachability`.
    public struct Transition: Sendable, Equatable {
        public let from: State
        public let to: State
        public let reason: String

        public init(from: State, to: State, reason: String) {
            self.from = from
            self.to = to
            self.reason = reason
        }
    }

    public static let passiveFailureThreshold = 3

    public private(set) var state: State = .unknown
    /// When the current state began (nanoseconds on the caller's clock; 0 while unknown).
    public private(set) var since: UInt64 = 0
    public private(set) var lastError: String?
    public private(set) var consecutiveFailures = 0
    /// The last failure was the security policy's, not the network's.
    public private(set) var untrusted = false

    /// Requests are answered 503 at once: unreachable for a network reason.
    public var failsFast: Bool { state == .unreachable && !untrusted }

    public init() {}

    /// Feeds one signal observed at `now`; returns the transition when the state changed.
    public mutating func record(_ signal: Signal, now: UInt64) -> Transition? {
        if case .probeUntrusted = signal { untrusted = true } else { untrusted = false }
        switch signal {
        case .probeSucceeded:
            consecutiveFailures = 0
            return move(to: .reachable, now: now, reason: "probe succeeded")
        case .connected:
            consecutiveFailures = 0
            return move(to: .reachable, now: now, reason: "connection succeeded")
        case .probeFailed(let why):
            lastError = why
            consecutiveFailures += 1
            return move(to: .unreachable, now: now, reason: "probe failed: \(why)")
        case .probeUntrusted(let why):
            lastError = "untrusted: \(why)"
            consecutiveFailures += 1
            return move(to: .unreachable, now: now, reason: "probe: untrusted upstream: \(why)")
        case .refused(let why):
            lastError = why
            consecutiveFailures += 1
            return move(to: .unreachable, now: now, reason: "connection refused: \(why)")
        case .failed(let why):
            lastError = why
            consecutiveFailures += 1
            guard consecutiveFailures >= Self.passiveFailureThreshold else { return nil }
            return move(to: .unreachable, now: now, reason: "\(consecutiveFailures) failures in a row: \(why)")
        }
    }

    private mutating func move(to new: State, now: UInt64, reason: String) -> Transition? {
        guard new != state else { return nil }
        let t = Transition(from: state, to: new, reason: reason)
        state = new
        since = now
        return t
    }
}
