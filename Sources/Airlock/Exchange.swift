import AirlockConfig
import AirlockSerialization
import AirlockIO
import AirlockSerialization
import AirlockSession
import AirlockWire

/// One exchange on a client connection: its typed context through every phase (Pingora's
/// CTX) and the executor of its `ExchangeMachine` (async-http-client's request bag beside its
/// connection handler): the upstream connection, both bodies, validation and the exchange's
/// end run here (`Exchange+Run`, `+Upstream`, `+RequestBody`, `+Response`, `+Validation`,
/// `+End`). The client connection (`ClientConnection`) owns the client socket, reads heads
/// and hands each request to the phases and then to a new exchange; it hears back once, when
/// the exchange ends (`ClientConnection.exchangeEnded`).
final class Exchange {
    /// The client connection this exchange runs on (it outlives its exchanges). Nil only in a
    /// context a phase test builds, where no executor runs.
    private unowned(unsafe) let connection: ClientConnection?
    var client: ClientConnection { connection.unsafelyUnwrapped }
    /// The client's stream and worker, held here so that the executor reaches them without
    /// going through the connection each time (a client connection is the target of weak
    /// references, so its retains take the slow path: ~5 % of a small request, measured).
    /// The worker is held strongly (it outlives every exchange, and is no weak reference's
    /// target): one retain per exchange, where each use of an unowned(unsafe) one was retained
    /// and released (60 places; ~120 instructions a request).
    private unowned(unsafe) let stream: Stream?
    private let workerRef: Worker?
    var clientStream: Stream { stream.unsafelyUnwrapped }
    var worker: Worker { workerRef.unsafelyUnwrapped }

    /// The upstream peer phase's answer: the route and the upstream's key.
    func routed(_ peer: UpstreamPeer) {
        routeRef = peer.route
        key = peer.key
    }
    let id: RequestID
    let request: RequestHead
    /// The route and its upstream's key: set by the upstream peer phase (`routed`); nil only
    /// for a request the request filter refused, or one no route matched.
    private(set) var routeRef: Route!
    /// The route's configuration, read in place (never copied per access).
    var route: RouteConfig { _read { yield routeRef.config } }
    private(set) var key: UpstreamKey!
    /// Whether the upstream peer phase gave it a route (else it was refused before).
    var isRouted: Bool { routeRef != nil }
    let started: UInt64

    /// The exchange's phase and every decision about it (retry, half-close, reuse): the
    /// connection code reports events to it and does what it answers.
    var machine: ExchangeMachine

    // request side
    var requestDecoder: BodyDecoder
    var requestOut: OutFraming
    var requestBodyDone: Bool { machine.requestBodyDone }
    /// The request phase's state (a rebuilt or collected body, a multipart check, upload
    /// pacing), made only on routes with a `request:` block so that other exchanges stay small.
    var requestPhase: RequestPhaseState?
    var phaseState: RequestPhaseState {
        if let p = requestPhase { return p }
        let p = RequestPhaseState()
        requestPhase = p
        return p
    }
    /// The body the route's request serializer sends instead of the client's; nil: the
    /// client's body (or none) is relayed.
    var replacementBody: HTTPRequestSerializer.Replacement? {
        get { requestPhase?.replacementBody }
        set { phaseState.replacementBody = newValue }
    }
    /// The client's body so far, while the gateway reads it whole before choosing an upstream
    /// (a serializer that rebuilds it); nil otherwise.
    var collected: [UInt8]? {
        get { requestPhase?.collected }
        set { phaseState.collected = newValue }
    }
    var multipart: MultipartValidator? {
        get { requestPhase?.multipart }
        set { phaseState.multipart = newValue }
    }
    var bytesIn: UInt64 = 0
    /// Set when the request phase refused the request: what its reject record says.
    var requestRejection: RequestRejection? {
        get { requestPhase?.requestRejection }
        set { phaseState.requestRejection = newValue }
    }
    /// The route's `request.timeout` over the whole exchange; nil on routes without one.
    var deadline: Timer?

    // upstream
    var upstream: UpstreamConnection?
    /// The resolved addresses and the one dialled last.
    var connector = UpstreamConnector()
    var connectedAt: UInt64 = 0
    var responseStartedAt: UInt64 = 0
    var lastUpstreamAddress: SocketAddress?
    /// Holds one of its worker's slots for this upstream (max_connections_per_upstream) until a
    /// new connection is attached, which takes it over.
    var holdsSlot = false
    /// Counted in the in-flight gauge (from dispatch until `end` releases it, once).
    var inFlight = false
    /// Non-zero while waiting in the worker's queue for this upstream.
    var queueTicket: UInt64 = 0
    /// The one request let through while the route's circuit is half-open
    /// (`Reachability.admit`): its response closes the circuit even on a pooled connection.
    var reachabilityTrial = false

    // response side
    var responseScanner: HeadScanner
    var response: ResponseHead?
    var responseDecoder = BodyDecoder(framing: .none)
    var responseFraming: BodyFraming = .none
    var responseOut: OutFraming = .none
    var responseHeadSent: Bool { machine.responseHeadSent }
    var responseStatus = 0
    var bytesOut: UInt64 = 0
    var clientKeepAlive = true
    /// Set only on routes with a `response:` block, when the response needs it.
    var validation: ResponseValidation?
    /// Set at the first cut mid-body of a response (`Exchange+Resume`).
    var resumption: Resumption?
    /// Set on routes with a `cache:` block (`Exchange+Cache`).
    var cache = CacheState()
    /// It came inside an intercepted CONNECT's TLS session (its URL is `https`).
    let intercepted: Bool

    /// The context of a parsed request, made before its first phase (Pingora's `new_ctx`): the
    /// request filter runs over it, the upstream peer phase routes it (`routed`), and every
    /// request, refused or not, is logged from it.
    init(client: ClientConnection?, id: RequestID, request: RequestHead, limits: WireLimits) {
        self.connection = client
        self.intercepted = client?.isIntercepted ?? false
        self.stream = client?.stream
        self.workerRef = client?.worker
        self.id = id
        self.request = request
        self.started = EventLoop.nowNanos()
        self.metrics = TaskMetrics(fetchStart: started)
        self.requestDecoder = BodyDecoder(framing: request.framing)
        requestOut = ForwardingHeads.requestFraming(request.framing)
        machine = ExchangeMachine(method: request.method, requestHasBody: request.framing != .none)
        responseScanner = HeadScanner(kind: .response, limits: limits)
    }

    var limits: LimitsConfig { worker.limits }
    /// Still the exchange its client connection is running (callbacks that outlive it, such as
    /// a resolve or a timer, act only then).
    var isCurrent: Bool { client.exchange === self }

    /// The request target as the client named it, for logs.
    var targetDescription: String {
        switch request.target {
        case .origin(let path): return path
        case .absolute(let scheme, let host, let port, let path):
            return "\(scheme.rawValue)://\(host)\(port.map { ":\($0)" } ?? "")\(path)"
        case .authority(let host, let port): return "\(host):\(port)"
        case .asterisk: return "*"
        }
    }

    // task (GET /tasks, /events): milestones, backpressure, how it ended
    /// NSURLSessionTaskMetrics' milestones, stored as they happen (a few integers, nothing allocated).
    var metrics: TaskMetrics
    /// How the task ended, for its event: `.completed` unless cancelled or rejected.
    var outcome: TaskEvent.Kind = .completed
    /// Why it failed or was cancelled (an error reason code), for its event.
    var failure: String?

    /// The task's state now (see `TaskState.derive`).
    var taskState: TaskState {
        TaskState.derive(machine, upstreamReady: upstream?.state == .active, suspended: machine.isSuspended,
                         cancelled: outcome == .cancelled)
    }

    var uploadProgress: TaskProgress {
        if case .length(let n) = request.framing { return TaskProgress(done: bytesIn, expected: n) }
        return TaskProgress(done: bytesIn, expected: request.framing == .none ? 0 : nil)
    }

    var downloadProgress: TaskProgress {
        guard !machine.awaitingResponseHead else { return TaskProgress() }
        if case .length(let n) = responseFraming { return TaskProgress(done: bytesOut, expected: n) }
        return TaskProgress(done: bytesOut, expected: responseFraming == .none ? 0 : nil)
    }

    func snapshot(worker: Int, now: UInt64) -> TaskSnapshot {
        TaskSnapshot(id: id.description, worker: worker, route: route.name, method: request.method.name,
                     url: targetDescription, state: taskState, upload: uploadProgress, download: downloadProgress,
                     ageMillis: Double((now &- started) / 1000) / 1000)
    }

    func event(_ kind: TaskEvent.Kind, status: Int = 0, reason: String? = nil) -> TaskEvent {
        TaskEvent(kind: kind, id: id.description, route: route.name, method: request.method.name,
                  url: targetDescription, status: status, bytesIn: bytesIn, bytesOut: bytesOut,
                  durationMillis: durationMillis, reason: reason)
    }

    var durationMillis: Double { Double(EventLoop.nowNanos() - started) / 1_000_000 }
}
