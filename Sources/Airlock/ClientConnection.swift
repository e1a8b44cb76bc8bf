import AirlockConfig
import AirlockIO
import AirlockSecurity
import AirlockSession
import AirlockWire
import Logging

/// One client connection: reads request heads, runs each through the phases before any byte
/// goes upstream (`+Dispatch`), hands it to a new `Exchange`, which runs the exchange and tells
/// the connection when it ended (`+End`), and goes back for the next head (keep-alive,
/// pipelining). Its decisions are `ClientLifecycle`'s; the exchange's are `ExchangeMachine`'s.
/// The client stream's and the upstream connection's events arrive here and go on to the
/// exchange that owns them. Lives on one worker.
final class ClientConnection: StreamDelegate {
    // Stored properties, widest first: one of these lives for every client connection, idle
    // ones included, so what is rare is boxed and nothing is padded (`IdleClientMemoryTests`).
    unowned(unsafe) let worker: Worker   // the worker outlives its connections
    let stream: Stream
    /// The header, drain-grace and rest-of-body timer: made when first armed (`timer`), and
    /// given back when the connection is idle again (`armIdleTimer`), so idle ones hold none.
    private var timerStorage: Timer?
    var exchange: Exchange?
    /// The CONNECT tunnel this connection became (`lifecycle.phase == .tunneling`).
    var tunnel: Tunnel?
    private var handshakeBox: Box<InterceptHandshake>?
    private var interceptionBox: Box<Interception>?
    /// The upstream connection that served this client's last exchange. A preference for the
    /// next one, never ownership: the connection is back in the worker's pool, where any client
    /// may take it (nginx's and HAProxy's pools do the same), so idle clients hold no upstreams.
    weak var lastUpstream: UpstreamConnection?
    /// When the connection last became idle (accepted, or its last response queued).
    var idleSince: UInt64 = EventLoop.nowNanos()
    var scanner: HeadScanner
    // The byte-sized ones fill the scanner's tail, before the address's 4-byte alignment.
    /// Between requests or in one, whether the client can still send, whether we are stopping.
    var lifecycle = ClientLifecycle()
    var timerMode: TimerMode = .idle
    /// True while `readHead` runs (it is not re-entered: see there).
    var readingHeads = false
    let peer: SocketAddress

    var phase: ClientLifecycle.Phase { lifecycle.phase }

    /// The connection's timer, made on first use.
    var timer: Timer {
        if let t = timerStorage { return t }
        let t = Timer(loop: worker.loop) { [unowned self] in self.timerFired() }
        timerStorage = t
        return t
    }

    /// An intercepted CONNECT whose TLS handshake is running (`lifecycle.phase == .handshaking`).
    var handshake: InterceptHandshake? {
        get { handshakeBox?.value }
        set { handshakeBox = newValue.map(Box.init) }
    }

    /// Set once an intercepted CONNECT's handshake completed: every request on this connection
    /// came inside that TLS session and goes where the CONNECT said (`GatewayPhases.interceptedPeer`).
    /// Whether this connection is an intercepted CONNECT's TLS session (without copying its state out).
    var isIntercepted: Bool { interceptionBox != nil }
    var interception: Interception? {
        get { interceptionBox?.value }
        set { interceptionBox = newValue.map(Box.init) }
    }

    /// A value kept out of line: hundreds of bytes most connections never use, held in 8.
    private final class Box<Value> {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    enum TimerMode {
        case idle         // no timer: keep-alive idleness is the stream's read timeout
        case header       // a head has begun: it must be complete by header_timeout → 408
        case drainGrace   // draining and idle only briefly: close unless a request arrives
        case restOfBody   // the response is whole, the client's body is not: judged until header_timeout
    }

    /// While draining, a connection idle for less than this may still receive the request
    /// its client sent in answer to the last response (keep-alive clients send at once):
    /// it is answered, with `Connection: close`, instead of being lost to the close.
    static let drainGrace: Duration = .milliseconds(100)

    /// Bytes buffered from a socket before libevent stops reading it.
    static let readHighWatermark = 128 * 1024
    /// Output queued to a peer before the other side stops reading (backpressure).
    static let writeHighWatermark = 256 * 1024

    init(worker: Worker, fd: Int32, peer: SocketAddress) {
        self.worker = worker
        self.peer = peer
        self.stream = Stream(loop: worker.loop, fd: fd)
        self.scanner = HeadScanner(kind: .request, limits: worker.wireLimits)
        stream.delegate = self
        stream.setReadHighWatermark(max(Self.readHighWatermark, worker.limits.headerBytes + 4))
        // Keep-alive idleness is the read timeout (re-armed by libevent on every read);
        // the header timer runs only while a request head is incomplete.
        stream.setTimeouts(read: worker.limits.idleTimeout, write: worker.limits.idleTimeout)
    }

    var limits: LimitsConfig { worker.limits }
    var logger: Logger { worker.logger }

    // MARK: timers

    /// Back to waiting for a head: the header timer starts with its first byte. A timer that
    /// is not armed is given back (made again if a later head arrives in pieces).
    func armIdleTimer() {
        if timerMode != .idle {
            timerMode = .idle
            timerStorage?.cancel()
        }
        if let t = timerStorage, !t.isScheduled { timerStorage = nil }
    }

    private func timerFired() {
        if phase == .handshaking {
            interceptHandshakeEnded(.tlsFailed("the TLS handshake did not complete within header_timeout (\(limits.headerTimeout))"))
            return
        }
        if timerMode == .restOfBody {
            // The rest of the body did not come in time: the client has its whole response.
            timerMode = .idle
            if phase == .forwarding, let ex = exchange { ex.run(ex.machine.restOfRequestBodyTimedOut()) }
            return
        }
        guard phase == .awaitingHead || phase == .pausedForOutput else { return }
        if timerMode == .drainGrace {
            timerMode = .idle
            readHead()   // serves a request that came in the grace, or closes
            return
        }
        let e = GatewayError(.headerTimeout, status: 408,
                             message: "the request head did not arrive within \(limits.headerTimeout)",
                             source: .client, mustClose: true)
        respondError(e, requestID: worker.nextRequestID())
    }

    // MARK: StreamDelegate

    func streamReadable(_ s: Stream) {
        switch phase {
        case .awaitingHead, .pausedForOutput: readHead()
        case .forwarding:
            guard let ex = exchange else { return }
            if ex.collected != nil {
                ex.collectRequestBody()
            } else {
                ex.pumpRequestBody()
            }
        case .tunneling, .handshaking, .closed: break   // a tunnel is its streams' delegate; the stream runs the handshake
        }
    }

    func streamWritable(_ s: Stream) {
        if lifecycle.outputDrained() {
            awaitNextHead()
            return
        }
        guard phase == .forwarding, let ex = exchange else { return }
        ex.clientWritable()
    }

    func stream(_ s: Stream, event: StreamEvent) {
        switch phase {
        case .awaitingHead, .pausedForOutput:
            if event == .readTimeout && stream.inputLength > 0 { return }   // the header timer decides
            if event == .eof {
                // Heads complete before the close were served already (data is delivered
                // before the close): what is left is nothing or a truncated head.
                lifecycle.inputClosed()
                readHead()
                return
            }
            close()
        case .forwarding:
            if event == .readTimeout { return }   // the upstream's timeouts govern an exchange
            if event == .eof, let ex = exchange {
                // Half-close: this response and those of requests already pipelined behind it
                // are still delivered, then the connection closes. Body bytes that arrived with
                // the close are still buffered (the upstream may still be connecting): they are
                // relayed first, and only a body still incomplete after that is an abort.
                ex.run(ex.machine.clientHalfClosed())
                return
            }
            if let ex = exchange { ex.clientAborted(event) } else { close() }
        case .handshaking:
            interceptHandshakeEnded(event)
        case .tunneling, .closed:
            break
        }
    }

    // MARK: head

    /// Parses and dispatches every complete head buffered, in order. Exchanges that end
    /// inside `dispatch` (an error answered at once) come back here through `awaitNextHead`;
    /// that nested call returns at once and this loop carries on, so a long pipeline of
    /// refused requests costs no stack.
    func readHead() {
        guard !readingHeads else { return }
        readingHeads = true
        defer { readingHeads = false }
        var polled = false
        while phase == .awaitingHead {
            if stream.outputLength >= Self.writeHighWatermark {
                // Responses pile up unread: take no further request until the client reads
                // (streamWritable resumes), so memory stays bounded whatever it pipelines.
                lifecycle.outputBacklogged()
                stream.setReading(false)
                stream.setWriteLowWatermark(Self.writeHighWatermark / 2)
                return
            }
            var available = stream.inputLength
            if available == 0 && lifecycle.shutdown == .draining && !polled {
                // Draining: before this connection is called idle and closed, take a request
                // the client sent before it could learn of the close (already in the socket).
                polled = true
                stream.readNow()
                available = stream.inputLength
            }
            if available == 0 { break }
            let headLength: Int?
            do {
                headLength = try stream.withInput(max: scanner.window) { buf throws(WireError) in
                    try scanner.scan(buf)
                }
            } catch {
                respondError(GatewayError(wire: error), requestID: worker.nextRequestID())
                return
            }
            guard let n = headLength else {
                if timerMode != .header && lifecycle.headTimerApplies {
                    timerMode = .header
                    timer.schedule(after: limits.headerTimeout)
                }
                break
            }
            let parsed: Result<RequestHead, WireError> = stream.withInput(max: n) { buf in
                let spare = worker.takeSpareHeaders()
                do throws(WireError) {
                    return .success(try RequestParser.parse(buf, limits: worker.wireLimits, reusing: consume spare))
                } catch {
                    return .failure(error)
                }
            }
            stream.drainInput(n)
            scanner.reset()
            armIdleTimer()
            switch parsed {
            case .success(let head): dispatch(head)
            case .failure(let e): respondError(GatewayError(wire: e), requestID: worker.nextRequestID())
            }
        }
        let idleFor = Duration.nanoseconds(Int64(EventLoop.nowNanos() &- idleSince))
        switch lifecycle.whenIdle(inputBuffered: stream.inputLength, idleFor: idleFor, drainGrace: Self.drainGrace) {
        case .keepWaiting:
            break
        case .close:
            closeAfterFlush()
        case .refuseTruncatedHead:
            respondError(GatewayError(.badRequest, status: 400,
                                      message: "the client closed its side in the middle of a request head",
                                      source: .client, mustClose: true),
                         requestID: worker.nextRequestID())
        case .awaitInFlightRequest(let rest):
            // Draining, and its last response has only just gone: the next request may be on its way.
            if timerMode != .drainGrace {
                timerMode = .drainGrace
                timer.schedule(after: rest)
            }
        }
    }

    /// Back to reading heads after an exchange the client's connection survives: serves the
    /// requests already pipelined behind it, or closes once a half-closed client has none left.
    func awaitNextHead() {
        lifecycle.exchangeEnded()
        idleSince = EventLoop.nowNanos()
        scanner.reset()
        stream.setReading(true)
        stream.setWriteLowWatermark(0)
        armIdleTimer()
        readHead()
    }

    /// Whether the connection can carry another request after this one: the gateway is not
    /// draining, and the client has not half-closed, or has already sent more. (A response
    /// that began before the drain said keep-alive: the connection then closes once no
    /// request is waiting, see `readHead`.)
    var clientContinues: Bool {
        lifecycle.carriesAnotherRequest(inputBuffered: stream.inputLength > 0)
    }

    // MARK: closing

    /// Graceful shutdown of this connection: an exchange in flight finishes and its response
    /// carries `Connection: close`; an idle connection closes at once (once what is queued for
    /// it has gone out), unless a request has already arrived on it, which is answered first.
    func drain() {
        lifecycle.drain()   // a tunnel runs on until the drain timeout (`abort`)
        if phase == .awaitingHead && !readingHeads { readHead() }
    }

    /// The drain timeout passed: an exchange still in flight is cut (and logged as such).
    func abort() {
        if let t = tunnel { t.abort(); return }
        if handshake != nil {
            interceptHandshakeEnded(.tlsFailed("the drain timeout passed during the TLS handshake"))
            return
        }
        guard let ex = exchange else { close(); return }
        ex.run(ex.machine.clientGone()) {
            GatewayError(.drainTimeout, status: 503, message: "the drain timeout passed with the exchange in flight",
                         source: .internal)
        }
    }

    func close() {
        guard phase != .closed else { return }
        lifecycle.closed()
        timerStorage?.cancel()
        stream.close()
        interceptedSessionRecord()?()
        worker.clientClosed(self)
    }

    /// Flush what is queued (an error or a final response), then close.
    func closeAfterFlush() {
        guard phase != .closed else { return }
        lifecycle.closed()
        timerStorage?.cancel()
        let w = worker
        w.flushStarted()
        let record = interceptedSessionRecord()
        stream.closeAfterFlush {
            record?()
            w.flushEnded()
        }
        worker.clientClosed(self)
    }
}

/// The upstream connection's events go to the exchange it serves (a pooled connection has no
/// owner; one whose exchange is gone is closed).
extension ClientConnection: UpstreamOwner {
    func upstreamConnected(_ u: UpstreamConnection) {
        if let ex = exchange { ex.upstreamConnected(u) } else { u.close() }
    }

    func upstreamReadable(_ u: UpstreamConnection) {
        guard phase == .forwarding, let ex = exchange else { return }
        ex.upstreamReadable(u)
    }

    func upstreamWritable(_ u: UpstreamConnection) {
        exchange?.upstreamWritable(u)
    }

    func upstreamFailed(_ u: UpstreamConnection, event: StreamEvent) {
        if let ex = exchange { ex.upstreamFailed(u, event: event) } else { u.close() }
    }

    func upstreamUntrusted(_ u: UpstreamConnection, failure: TrustFailure, presented: [PeerCertificate]) {
        exchange?.upstreamUntrusted(u, failure: failure, presented: presented)
    }
}
