import AirlockConfig
import AirlockIO
import AirlockSerialization
import AirlockSession
import AirlockWire

/// The named phases every proxied request goes through, in this order (Pingora's `ProxyHttp`):
///
///     requestFilter → upstreamPeer → upstreamRequestFilter (the route's request serializer:
///         upstreamRequestBodyFilter for a body read whole, upstreamRequestHead)
///         → connect + trust (session; failToConnect: the next address or the answer)
///         → upstreamResponseFilter (head validation) → upstreamResponseBodyFilter (body
///         validation, when the head filter asked for the body) → relay → logging
///
/// A CONNECT request takes its own branch after the request filter:
///
///     requestFilter → connectPeer → tunnel (`Tunnel`: connect, 200, raw relay)
///                                 | beginInterception (`connect: intercept`: 200, our TLS handshake,
///                                   logging(interception:), and logging(interceptedSession:) when the
///                                   connection ends; each request inside takes the
///                                   first line with interceptedPeer for upstreamPeer)
///
/// Each phase is one method with a default. `ClientConnection` is the executor: it calls the
/// phases in order over one typed per-request context (`Exchange`) and performs what the
/// `ExchangeMachine` decides between them. `logging` runs exactly once per request, last,
/// whatever happened (errors, rejects, aborts, cancels and shutdown included): it is the only
/// place that writes `request.error`, `request.rejected`, `response.rejected` and
/// `request.access` records, counts metrics and posts the task's final event.
protocol ProxyPhases {
    /// Refuses a request before anything is chosen for it (CONNECT, body limits, loops).
    func requestFilter(_ req: RequestHead) -> GatewayError?
    /// The route and the upstream a request goes to.
    func upstreamPeer(_ req: RequestHead) -> Result<UpstreamPeer, GatewayError>
    /// What becomes of a CONNECT: its route's policy (`connect:`), port check and tunnel target,
    /// or why it is refused (403 no-route, connect-denied, connect-port-denied).
    func connectPeer(_ req: RequestHead) -> Result<ConnectPeer, GatewayError>
    /// The route and upstream of a request inside an intercepted CONNECT: the CONNECT's, when
    /// the request names the intercepted authority (else 421 misdirected-request).
    func interceptedPeer(_ req: RequestHead, _ interception: Interception) -> Result<UpstreamPeer, GatewayError>
    /// The request phase: what the route's request serializer makes of the request before
    /// any upstream is chosen (a body to replace or to read whole first, a multipart body to
    /// check while it streams), or why it refuses it.
    func upstreamRequestFilter(_ ex: Exchange) -> RequestFilterVerdict
    /// Fail to connect: what a connect that gave the exchange no upstream becomes: another
    /// address may be tried (the machine picks it, or answers after the last), or the client is
    /// answered now. Only the connector's failures (resolve, egress, a loop, a refused dial,
    /// a tunnel's connect timeout); an exchange's timeouts and TLS are the machine's
    /// (`upstreamFailed`). `subject`: an exchange's upstream or a CONNECT tunnel's target.
    func failToConnect(_ failure: ConnectFailure, _ subject: ConnectSubject) -> FailToConnectVerdict
    /// The request cache filter (Pingora's `request_cache_filter` and cache key): the URL the
    /// route's cache keys this request by, or nil when the cache takes no part (no `cache:`, a
    /// target without a URL). Runs after the upstream peer (the route) and before any connect.
    func requestCacheFilter(_ ex: Exchange) -> CacheKey?
    /// The response cache filter (Pingora's `response_cache_filter`): whether the response's
    /// body is copied for the store, judged on the head (RFC 9111 3's rules that need no body,
    /// and `max_object` against a declared length); the store itself is decided once the body is
    /// whole and the validators passed it.
    func responseCacheFilter(_ ex: Exchange, _ head: ResponseHead, maxObject: Int) -> Bool
    /// What the route's response validators make of a response head, before any byte of it
    /// reaches the client.
    func upstreamResponseFilter(_ ex: Exchange, _ head: ResponseHead, framing: BodyFraming) -> ResponseFilterVerdict
    /// What the route's body validator makes of a response body read whole for it (the head
    /// filter asked for it), before any byte of it reaches the client.
    func upstreamResponseBodyFilter(_ ex: Exchange, _ v: ResponseValidation) -> ResponseBodyVerdict
    /// The last phase: every record and counter of one request, exactly once (also of one
    /// refused before it was routed: `ex.isRouted` is false).
    func logging(_ ex: Exchange, _ summary: RequestSummary, _ end: ExchangeEnd)
    /// The records of a head that never became a request (unparsable, timed out).
    func logging(unparsed summary: RequestSummary, _ end: ExchangeEnd)
    /// The last phase of a CONNECT tunnel: its records and counters, exactly once
    /// (`TunnelMachine.claimLogging`), whether it ended cleanly, in error, or before the 200.
    func logging(tunnel: Tunnel, _ end: TunnelEnd)
}

extension ProxyPhases {
    func requestFilter(_ req: RequestHead) -> GatewayError? { nil }
    func upstreamRequestFilter(_ ex: Exchange) -> RequestFilterVerdict { .proceed }
    func upstreamResponseFilter(_ ex: Exchange, _ head: ResponseHead, framing: BodyFraming) -> ResponseFilterVerdict {
        .relay
    }
    func upstreamResponseBodyFilter(_ ex: Exchange, _ v: ResponseValidation) -> ResponseBodyVerdict { .accepted }
    func logging(_ ex: Exchange, _ summary: RequestSummary, _ end: ExchangeEnd) {}
    func logging(unparsed summary: RequestSummary, _ end: ExchangeEnd) {}
    func logging(tunnel: Tunnel, _ end: TunnelEnd) {}
}

/// `upstreamPeer`'s answer: the route, and the upstream connection key (pool identity).
struct UpstreamPeer {
    let route: Route
    let key: UpstreamKey
}

/// `connectPeer`'s answer: the route, what it does with the CONNECT, and where a tunnel goes
/// (the CONNECT authority on an `origin` route, the fixed upstream's host and port otherwise).
struct ConnectPeer {
    let route: Route
    let policy: ConnectPolicy
    /// Host as a resolver takes it (IPv6 without brackets) and port.
    let host: String
    let port: UInt16
    /// `host:port` as the client wrote it in the CONNECT (lower-cased host): for logs.
    let target: String
}

/// `upstreamRequestFilter`'s answer.
enum RequestFilterVerdict {
    /// Go on (the exchange carries what the serializer decided).
    case proceed
    /// 400 with this error; recorded as a request reject with `reason` and `message`.
    case refuse(GatewayError, reason: String, message: String)
}

/// Who was connecting (`failToConnect`'s answers name it as the client knows it).
enum ConnectSubject {
    /// An exchange's upstream.
    case upstream(UpstreamKey)
    /// A CONNECT tunnel's target.
    case tunnel(host: String, port: UInt16)
}

/// Why the connector gave an exchange or a tunnel no upstream connection (`failToConnect`'s
/// question).
enum ConnectFailure {
    /// The resolver failed (its error text).
    case unresolvable(String)
    /// Every resolved address was refused by the route's egress policy (`egressFilter`'s 403).
    case egressRefused(GatewayError)
    /// The address is this gateway's own listener.
    case ownListener(SocketAddress)
    /// No socket could be opened for the address (its error), or no address is left (nil).
    case notDialled(String?)
    /// The address refused the connection (the socket's error, if it gave one); `retryAfter`:
    /// the route's circuit is open.
    case refused(SocketAddress, String?, retryAfter: Int?)
    /// A tunnel's connect did not complete within `connect_timeout` (504).
    case timedOut(SocketAddress?, Duration)
}

/// `failToConnect`'s answer.
enum FailToConnectVerdict {
    /// Another address may be tried: the machine decides (`ExchangeMachine.connectFailed`,
    /// `TunnelMachine.connectFailed`);
    /// the error is the answer after the last one.
    case retry(GatewayError)
    /// No other address can help: the client gets this error now.
    case answer(GatewayError)
}

/// `upstreamResponseFilter`'s answer: the validator's verdict on the head, and the state the
/// validate phase keeps (nil when the response streams untouched). What follows from the
/// verdict (enforce or report-only, buffer, drain, reject) is `ExchangeMachine`'s decision
/// (`responseHeadJudged`).
struct ResponseFilterVerdict {
    let head: ExchangeMachine.HeadVerdict
    let validation: ResponseValidation?

    static var relay: ResponseFilterVerdict { ResponseFilterVerdict(head: .accepted, validation: nil) }

    /// The route's mode, for the machine (`.enforce` when there is nothing to enforce).
    var enforcement: ExchangeMachine.Enforcement {
        validation?.config.mode == .reportOnly ? .reportOnly : .enforce
    }
}

/// `upstreamResponseBodyFilter`'s answer: the validator's verdict on the whole body (its
/// rejection, or the body it made, is kept in the exchange's `ResponseValidation`). Enforce
/// or report-only is `ExchangeMachine`'s decision (`responseBodyJudged`).
enum ResponseBodyVerdict {
    case accepted
    case rejected

    var accepted: Bool { self == .accepted }
}

/// How one request ended: what `logging` records and what becomes of the client connection.
enum ExchangeEnd {
    /// The whole response reached the client. `upstreamReusable`: its body was read to the end.
    case completed(upstreamReusable: Bool)
    /// Airlock answered with its own response (an error or a reject); `keepAlive`: the client
    /// connection carries on.
    case answered(GatewayError, keepAlive: Bool)
    /// Part of the response reached the client, then the upstream failed: cut off.
    case truncated(GatewayError)
    /// Nobody is left to answer: the client went away, an admin cancelled, or the drain timed out.
    case aborted(GatewayError)
    /// The whole response reached the client, then the rest of its request body proved
    /// malformed (an upstream that answered before reading it): the client's error.
    case requestFailed(GatewayError)

    var error: GatewayError? {
        switch self {
        case .completed: return nil
        case .answered(let e, _), .truncated(let e), .aborted(let e), .requestFailed(let e): return e
        }
    }

    /// The response reached the client whole (Airlock's own answer counts).
    var complete: Bool {
        switch self {
        case .completed, .answered, .requestFailed: return true
        case .truncated, .aborted: return false
        }
    }
}

/// What the logging phase knows of a request that may never have become an exchange (a head
/// that failed to parse, a refused or unrouted request).
struct RequestSummary {
    let id: RequestID
    let request: RequestHead?
    let client: SocketAddress
    /// It came inside an intercepted CONNECT's TLS session.
    var intercepted = false
}
