/// One upstream's reachability (AFNetworkReachabilityManager's idea, for upstreams): a pure
/// state machine fed with active probe results and passive signals from real traffic, with the
/// time of each signal given to it (no clock of its own).
///
/// - A probe (TCP connect, plus the TLS handshake for https) decides at once either way.
/// - Passive: a connection that came up makes the upstream reachable; a refused connection
///   makes it unreachable at once (nothing listens); connect timeouts (`.failed`; the TLS
///   handshake included) count, and `passiveFailureThreshold` of them in a row make it
///   unreachable (one slow connect does not). A connection that fails after it came up (a reset,
///   a close) is the exchange's error, not a reachability signal.
///   A timeout counts only when its attempt began after the last connection came up: attempts
///   begun together (a burst that overran the upstream's accept queue) and timing out together
///   are not three signals that it is down while connections begun beside them came up; they
///   are history (`lastError`), not a reason to fail every request fast.
/// - While unreachable, only a successful probe or connection restores it.
/// - A probe whose TLS upstream fails the route's security policy (`probeUntrusted`) makes it
///   unreachable too, but its requests do not fail fast (`failsFast`): each still meets the
///   real handshake and is refused as untrusted, with its own reject record.
/// - Fail-fast is a circuit breaker that needs no probes: unreachable for a network reason
///   opens the circuit for `retryAfter` (requests are answered 503 at once); then one request
///   is let through as a trial (half-open) while the others still fail fast (`admit`). Its
///   success closes the circuit (reachable); its failure opens it again for another
///   `retryAfter`. A trial that never reports (its client went away before the connect ended)
///   is replaced by another after `retryAfter`.
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
        /// A request's connect (its TLS handshake included) timed out.
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

    /// Whether requests go upstream (`admit`): the fail-fast circuit.
    public enum Circuit: Sendable, Equatable {
        case closed                        // requests go upstream → .open
        case open(until: UInt64)           // requests fail fast until then → .halfOpen (a trial is admitted)
        case halfOpen(trialUntil: UInt64)  // one trial in flight, the rest fail fast → .closed, .open, .halfOpen (it never reported)
    }

    /// What a request to the upstream does now.
    public enum Admission: Sendable, Equatable {
        case proceed      // the circuit is closed
        case trial        // the one request that tries the upstream again
        case failFast     // answered 503 upstream-unreachable at once
    }

    public static let passiveFailureThreshold = 3
    /// How long the circuit stays open before a trial, in the unit of `now` (milliseconds for
    /// the gateway).
    public let retryAfter: UInt64

    public private(set) var state: State = .unknown
    /// When the current state began (nanoseconds on the caller's clock; 0 while unknown).
    public private(set) var since: UInt64 = 0
    /// The most recent failure, kept after a recovery (history); `currentError` is nil then.
    public private(set) var lastError: String?
    /// When `lastError` was seen (nil before any failure).
    public private(set) var lastErrorAt: UInt64?
    public private(set) var consecutiveFailures = 0
    /// When a connection last came up (or a probe succeeded), on the caller's clock.
    public private(set) var lastSuccessAt: UInt64?
    /// The last failure was the security policy's, not the network's.
    public private(set) var untrusted = false

    public private(set) var circuit: Circuit = .closed

    /// Requests do not simply go upstream: unreachable for a network reason (the circuit is
    /// open or half-open; `admit` says which request is the trial).
    public var failsFast: Bool { circuit != .closed }

    /// The error that explains the current state: nil while reachable (`lastError` keeps it).
    public var currentError: String? { state == .reachable ? nil : lastError }

    /// `retryAfter`: how long the circuit stays open before a trial, in the unit of `now`.
    public init(retryAfter: UInt64 = 5000) {
        self.retryAfter = retryAfter
    }

    /// Feeds one signal observed at `now`; returns the transition when the state changed.
    /// `attemptStarted`: when the failed attempt began (for `.failed`; on the same clock). One
    /// begun before the last connection came up is recorded as history only.
    public mutating func record(_ signal: Signal, now: UInt64, attemptStarted: UInt64? = nil) -> Transition? {
        if case .probeUntrusted = signal { untrusted = true } else { untrusted = false }
        switch signal {
        case .probeSucceeded:
            consecutiveFailures = 0
            lastSuccessAt = now
            circuit = .closed
            return move(to: .reachable, now: now, reason: "probe succeeded")
        case .connected:
            consecutiveFailures = 0
            lastSuccessAt = now
            circuit = .closed
            return move(to: .reachable, now: now, reason: "connection succeeded")
        case .probeFailed(let why):
            failed(why, now: now)
            return open(now: now, reason: "probe failed: \(why)")
        case .probeUntrusted(let why):
            failed("untrusted: \(why)", now: now)
            circuit = .closed   // each request meets the real handshake
            return move(to: .unreachable, now: now, reason: "probe: untrusted upstream: \(why)")
        case .refused(let why):
            failed(why, now: now)
            return open(now: now, reason: "connection refused: \(why)")
        case .failed(let why):
            if let started = attemptStarted, let success = lastSuccessAt, started < success {
                lastError = why   // older than a connection that came up: history only
                lastErrorAt = now
                return nil
            }
            failed(why, now: now)
            // One connect timeout is not enough while reachable; while unreachable (a trial
            // failed, say) the circuit opens again at once.
            guard consecutiveFailures >= Self.passiveFailureThreshold || state == .unreachable else { return nil }
            return open(now: now, reason: "\(consecutiveFailures) failures in a row: \(why)")
        }
    }

    /// Whether a request at `now` goes upstream, is the trial, or fails fast.
    public mutating func admit(now: UInt64) -> Admission {
        switch circuit {
        case .closed:
            return .proceed
        case .open(let until) where now >= until, .halfOpen(let until) where now >= until:
            circuit = .halfOpen(trialUntil: now + retryAfter)
            return .trial
        case .open, .halfOpen:
            return .failFast
        }
    }

    private mutating func failed(_ why: String, now: UInt64) {
        lastError = why
        lastErrorAt = now
        consecutiveFailures += 1
    }

    private mutating func open(now: UInt64, reason: String) -> Transition? {
        circuit = .open(until: now + retryAfter)
        return move(to: .unreachable, now: now, reason: reason)
    }

    private mutating func move(to new: State, now: UInt64, reason: String) -> Transition? {
        guard new != state else { return nil }
        let t = Transition(from: state, to: new, reason: reason)
        state = new
        since = now
        return t
    }
}
