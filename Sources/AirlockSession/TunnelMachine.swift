/// One CONNECT tunnel's lifecycle and every decision in it, with no I/O: the gateway's `Tunnel`
/// reports what its two streams did and performs the `Action` it gets back (the style of
/// `ExchangeMachine`). It decides when the client gets its `200 Connection established`, which
/// side stops reading for backpressure (libevent's le-proxy: a side stops while its partner's
/// output is over the high-water mark, and resumes once that drained), when an EOF is passed
/// on as `shutdown(SHUT_WR)` (only after the partner's output has drained, so nothing sent
/// before the EOF is lost), and when the tunnel is over.
///
/// A tunnel has two directions: client → upstream and upstream → client. Each is open, or its
/// source sent EOF and the shutdown toward its destination waits for that output to drain, or
/// it is shut. The tunnel closes when both directions are shut, or at once on an error or a
/// timeout.
public struct TunnelMachine: Sendable, Equatable {
    public enum Side: String, Sendable, Equatable {
        case client, upstream

        public var partner: Side { self == .client ? .upstream : .client }
    }

    public enum State: Sendable, Equatable {
        case connecting           // resolving and connecting the upstream → .established, .closed
        case established          // 200 sent, bytes flow both ways → .halfClosed, .closed
        case halfClosed(Side)     // this side sent EOF; the other direction still flows → .closed
        case closed(TunnelEnd)    // final
    }

    /// Why the upstream could not be reached (before any 200).
    public enum ConnectFailure: Sendable, Equatable {
        case refused              // the address refused, or the socket could not be made
        case timeout              // connect_timeout passed
    }

    public enum Action: Sendable, Equatable {
        case none
        /// The connect to this address failed: try the next resolved one.
        case tryNextAddress
        /// Write `200 Connection established`, relay the bytes the client sent behind its
        /// CONNECT head, read both sides.
        case establish
        /// Answer the client with a JSON error (502 / 504), then close: no tunnel.
        case respondError(ConnectFailure)
        /// Stop reading this side: its partner's output is over the high-water mark.
        case pauseReading(Side)
        /// Read this side again (relay what it already buffered first).
        case resumeReading(Side)
        /// `shutdown(SHUT_WR)` toward this side now: its partner's EOF, passed on.
        case shutdownWrite(Side)
        /// This side's partner sent EOF but output toward it is still queued: shut its write
        /// side once that drained (its write low-water mark goes to 0 to hear of it).
        case shutdownWhenDrained(Side)
        /// Close both sides (what is still queued is dropped only on an error end).
        case close(TunnelEnd)
    }

    public private(set) var state: State = .connecting
    private var eof: Set<Side> = []
    private var shut: Set<Side> = []
    private var shutdownPending: Set<Side> = []
    private var paused: Set<Side> = []
    private var logged = false

    public init() {}

    /// The 200 went out: the client was told the tunnel is up.
    public private(set) var wasEstablished = false

    public var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Whether this side's reads are held for backpressure.
    public func isPaused(_ side: Side) -> Bool { paused.contains(side) }

    // MARK: connecting

    /// The upstream accepted the connection.
    public mutating func upstreamConnected() -> Action {
        guard state == .connecting else { return .none }
        state = .established
        wasEstablished = true
        return .establish
    }

    /// The connect to one address failed; `moreAddresses`: others were resolved. A refused
    /// address gives way to the next; a timeout ends the attempt (connect_timeout bounds it).
    public mutating func connectFailed(_ failure: ConnectFailure, moreAddresses: Bool) -> Action {
        guard state == .connecting else { return .none }
        if failure == .refused && moreAddresses { return .tryNextAddress }
        state = .closed(.connectFailed)
        return .respondError(failure)
    }

    /// The name did not resolve, or resolved to this gateway: answered before any connect.
    public mutating func refusedBeforeConnect() {
        if state == .connecting { state = .closed(.connectFailed) }
    }

    // MARK: relaying

    /// Output toward `side` went over the high-water mark: its partner stops reading.
    public mutating func outputFilled(toward side: Side) -> Action {
        guard isRelaying, !eof.contains(side.partner), !paused.contains(side.partner) else { return .none }
        paused.insert(side.partner)
        return .pauseReading(side.partner)
    }

    /// Output toward `side` drained (to the low-water mark; `empty`: all of it).
    public mutating func outputDrained(toward side: Side, empty: Bool) -> Action {
        guard isRelaying else { return .none }
        if shutdownPending.contains(side) {
            guard empty else { return .none }
            shutdownPending.remove(side)
            return shutDown(side)
        }
        if paused.contains(side.partner) {
            paused.remove(side.partner)
            return .resumeReading(side.partner)
        }
        return .none
    }

    /// `side` sent EOF (after everything it sent was relayed); `partnerOutputEmpty`: nothing
    /// is queued toward its partner.
    public mutating func eof(from side: Side, partnerOutputEmpty: Bool) -> Action {
        guard isRelaying, !eof.contains(side) else { return .none }
        eof.insert(side)
        paused.remove(side)
        if state == .established { state = .halfClosed(side) }
        if partnerOutputEmpty { return shutDown(side.partner) }
        shutdownPending.insert(side.partner)
        return .shutdownWhenDrained(side.partner)
    }

    private mutating func shutDown(_ side: Side) -> Action {
        shut.insert(side)
        if shut.count == 2 {
            state = .closed(.closed)
            return .close(.closed)
        }
        return .shutdownWrite(side)
    }

    // MARK: failures

    /// A side's connection failed (reset, write error). While connecting, only the client can.
    public mutating func failed(_ side: Side) -> Action {
        if state == .connecting && side == .upstream { return connectFailed(.refused, moreAddresses: false) }
        return end(side == .client ? .clientError : .upstreamError)
    }

    /// No byte either way for the idle timeout.
    public mutating func idleTimedOut() -> Action { end(.idleTimeout) }

    /// The gateway's drain timeout passed with the tunnel open.
    public mutating func drainTimedOut() -> Action { end(.drainTimeout) }

    /// An admin cancelled the tunnel (`DELETE /tasks`): closed at once, both sides.
    public mutating func cancelled() -> Action { end(.cancelled) }

    private mutating func end(_ how: TunnelEnd) -> Action {
        guard !isClosed else { return .none }
        state = .closed(how)
        return .close(how)
    }

    /// True exactly once: the caller writes the tunnel's records.
    public mutating func claimLogging() -> Bool {
        guard !logged else { return false }
        logged = true
        return true
    }

    private var isRelaying: Bool {
        switch state {
        case .established, .halfClosed: return true
        case .connecting, .closed: return false
        }
    }
}
