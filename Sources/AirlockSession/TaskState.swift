/// The state of a proxied exchange as an admin sees it (`GET /tasks`, `/events`), after
/// NSURLSessionTask's states, derived from the exchange machine plus what only the connection
/// code knows (whether an upstream is connected, whether backpressure holds the exchange).
public enum TaskState: String, Sendable, Equatable, CaseIterable {
    case connecting   // no upstream yet: resolving, connecting, TLS → .sending, .waiting, .failed, .cancelled
    case sending      // request head sent, body streaming up → .waiting, .receiving, .failed, .cancelled
    case waiting      // whole request sent, no response head yet → .receiving, .validating, .failed, .cancelled
    case receiving    // response head relayed, body streaming down → .completed, .failed, .cancelled
    case validating   // response held back for the route's validator → .receiving, .completed, .failed
    case suspended    // either side paused for backpressure → the state it left
    case tunneling    // a CONNECT tunnel relaying both ways (after connecting) → .completed, .failed, .cancelled
    case completed    // the client has the whole response; final
    case cancelled    // the client went away, or an admin cancelled it; final
    case failed       // answered with an error, cut off by the upstream, or its body malformed after the response; final

    public var isFinal: Bool { self == .completed || self == .cancelled || self == .failed }

    /// The state of an exchange:
    /// - `upstreamReady`: an upstream connection is bound to it and the request head went out;
    /// - `suspended`: either side's reads are paused for backpressure;
    /// - `cancelled`: the client went away or an admin cancelled it.
    public static func derive(_ m: ExchangeMachine, upstreamReady: Bool, suspended: Bool, cancelled: Bool) -> TaskState {
        if cancelled { return .cancelled }
        switch m.response {
        case .complete: return m.request == .failed ? .failed : .completed   // a malformed body after the response
        case .truncated, .answered: return .failed
        case .failed: return .cancelled   // nothing reached the client and nobody is left: it went away
        case .validating: return suspended ? .suspended : .validating
        case .relaying: return suspended ? .suspended : .receiving
        case .resuming: return .receiving   // the rest is on its way
        case .awaitingHead:
            guard upstreamReady else { return .connecting }
            if suspended { return .suspended }
            switch m.request {
            case .streamingBody, .bodyPending: return .sending
            case .complete: return .waiting
            case .failed: return .failed
            }
        }
    }
}
