/// The lifecycle of one client connection, with no I/O: where it is between requests, whether
/// the client can still send, and whether the gateway is stopping. The connection code reports
/// what happened and asks it what to do when no request is waiting (`whenIdle`) and whether the
/// connection can carry another request (`carriesAnotherRequest`).
///
/// Three independent facts, each a small enum rather than a flag: a half-closed client may also
/// be caught by a drain, and either may happen while responses wait unread. One enum of their
/// combinations would hide that; these three keep each transition one line.
public struct ClientLifecycle: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        case awaitingHead      // between requests (keep-alive), or a head is arriving → .forwarding, .pausedForOutput, .closed
        case pausedForOutput   // responses wait unread: no further request is taken → .awaitingHead (the client read), .closed
        case forwarding        // an exchange is in flight → .awaitingHead (keep-alive), .closed
        case tunneling         // a CONNECT tunnel owns the connection: no request follows → .closed
        case handshaking       // an intercepted CONNECT was answered 200; our TLS server handshake runs
                               // → .awaitingHead (requests inside the TLS session), .closed
        case closed            // final
    }

    public enum Input: Sendable, Equatable {
        case open              // the client may send more → .halfClosed
        case halfClosed        // it shut down its sending side: what it sent is still answered; final
    }

    public enum Shutdown: Sendable, Equatable {
        case running           // → .draining
        case draining          // the gateway stops: finish what is here, then close when idle; final
    }

    /// What to do when the head loop found no complete head waiting.
    public enum IdleAction: Sendable, Equatable {
        case keepWaiting                        // an open keep-alive connection, or a head still arriving
        case close                              // flush what is queued, then close
        case refuseTruncatedHead                // 400: the half-close cut a head off
        case awaitInFlightRequest(Duration)     // draining, but the last response left only just now:
                                                // the client may be sending its next request; look again then
    }

    public private(set) var phase: Phase = .awaitingHead
    public private(set) var input: Input = .open
    public private(set) var shutdown: Shutdown = .running

    public init() {}

    // MARK: events

    /// A complete head was parsed and an exchange starts.
    public mutating func dispatched() {
        if phase == .awaitingHead { phase = .forwarding }
    }

    /// A CONNECT was accepted: the connection becomes a tunnel (or its refusal closes it);
    /// it never carries another request.
    public mutating func tunnelStarted() {
        if phase == .awaitingHead { phase = .tunneling }
    }

    /// An intercepted CONNECT was answered: the TLS server handshake starts.
    public mutating func interceptStarted() {
        if phase == .awaitingHead { phase = .handshaking }
    }

    /// The TLS handshake of an intercepted CONNECT completed: requests follow inside it.
    public mutating func handshakeCompleted() {
        if phase == .handshaking { phase = .awaitingHead }
    }

    /// The exchange ended and the connection stays (keep-alive): back to heads.
    public mutating func exchangeEnded() {
        if phase != .closed && phase != .tunneling { phase = .awaitingHead }
    }

    /// Responses pile up unread: take no further request until the client reads.
    public mutating func outputBacklogged() {
        if phase == .awaitingHead { phase = .pausedForOutput }
    }

    /// The client read enough. True when the connection was paused and heads resume.
    public mutating func outputDrained() -> Bool {
        guard phase == .pausedForOutput else { return false }
        phase = .awaitingHead
        return true
    }

    /// The client shut down its sending side (EOF).
    public mutating func inputClosed() {
        input = .halfClosed
    }

    /// The gateway began a graceful shutdown.
    public mutating func drain() {
        shutdown = .draining
    }

    public mutating func closed() {
        phase = .closed
    }

    // MARK: decisions

    /// Whether the connection can carry another request after the current one: the gateway is
    /// not stopping, and the client can still send, or already sent more (`inputBuffered`).
    public func carriesAnotherRequest(inputBuffered: Bool) -> Bool {
        phase != .tunneling && shutdown == .running && (input == .open || inputBuffered)
    }

    /// Whether a head that has begun must finish within header_timeout: a half-closed client's
    /// partial head can never finish, and is answered at once instead.
    public var headTimerApplies: Bool { input == .open }

    /// No complete head is waiting. `inputBuffered`: bytes of a partial head; `idleFor`: time
    /// since the last response was queued (or the connection accepted).
    public func whenIdle(inputBuffered: Int, idleFor: Duration, drainGrace: Duration) -> IdleAction {
        guard phase == .awaitingHead else { return .keepWaiting }
        if input == .halfClosed {
            // It sends nothing more: every complete request it sent has been answered.
            return inputBuffered > 0 ? .refuseTruncatedHead : .close
        }
        if shutdown == .draining && inputBuffered == 0 {
            return idleFor >= drainGrace ? .close : .awaitInFlightRequest(drainGrace - idleFor)
        }
        return .keepWaiting
    }
}
