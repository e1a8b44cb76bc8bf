import AirlockConfig
import AirlockIO
import CoreMetrics
import AirlockSerialization
import AirlockSession
import AirlockWire

/// One CONNECT tunnel (`connect: tunnel`): resolves and connects the upstream, answers
/// `200 Connection established`, then relays bytes both ways unparsed, with le-proxy-style
/// backpressure, half-close and an idle timeout (`Tunnel+Relay`). Every decision is its
/// `TunnelMachine`'s; this class owns the upstream stream and the idle timer and does what
/// the machine says. It is the delegate of both streams from `start` on; the client
/// connection holds it (`ClientConnection.tunnel`) and stays in its worker's table, so a
/// tunnel counts against `max_connections`, and drains and closes like any connection.
/// It ends once (`finish`), which runs the logging phase (`logging(tunnel:)`) exactly once.
final class Tunnel: StreamDelegate {
    unowned(unsafe) let client: ClientConnection   // the client connection outlives its tunnel
    let id: RequestID
    let request: RequestHead
    let peer: ConnectPeer
    var machine = TunnelMachine()
    /// The upstream connection, from the first connect attempt until the tunnel ends.
    var upstream: Stream?
    var upstreamAddress: SocketAddress?
    /// The resolved addresses and the one dialled last.
    private var connector = UpstreamConnector()
    /// Payload bytes client → upstream (after the CONNECT head) and upstream → client.
    var bytesUp: UInt64 = 0
    var bytesDown: UInt64 = 0
    let started = EventLoop.nowNanos()
    /// When a byte was last read from either side (the idle timeout counts from here).
    var lastActivity = EventLoop.nowNanos()
    var idleTimer: AirlockIO.Timer?
    /// Airlock's own answer, when the tunnel never opened (502, 504, 508).
    var answer: GatewayError?
    /// Why a side failed after the 200 (its stream's error), for the `tunnel.error` record.
    var failure: String?
    /// The fail-to-connect phase's answer for the last failed attempt, given if the machine
    /// says no other address is left.
    private var connectAnswer: GatewayError?
    /// The bytes each way as `BodyPump` decodes them: a body that ends only with its
    /// connection (its framing state never changes, so one serves both directions).
    var raw = BodyDecoder(framing: .closeDelimited)
    /// Keeps the tunnel alive until the loop turn after its end (see `finish`).
    private var reaper: AirlockIO.Timer?

    var worker: Worker { client.worker }
    var clientStream: Stream { client.stream }
    var route: Route { peer.route }

    init(client: ClientConnection, id: RequestID, request: RequestHead, peer: ConnectPeer) {
        self.client = client
        self.id = id
        self.request = request
        self.peer = peer
    }

    var durationMillis: Double { Double(EventLoop.nowNanos() &- started) / 1_000_000 }

    // MARK: connecting

    /// Takes over the client stream and starts the upstream connect. The client is not read
    /// until the 200: what it already sent behind the CONNECT head waits in its input.
    func start() {
        clientStream.delegate = self
        clientStream.setReading(false)
        clientStream.setTimeouts(read: nil, write: nil)   // the tunnel's idle timer governs
        worker.context.metrics.tunnelsOpen.increment()
        let (phases, peer, route, id) = (worker.phases, peer, route, id)
        UpstreamConnector.resolve(worker.resolver, host: peer.host, port: peer.port, filter: {
            phases.egressFilter($0, host: peer.host, port: peer.port, route: route, id: id)
        }) { [weak self] result in
            guard let self, self.machine.state == .connecting else { return }
            switch result {
            case .success(let addresses):
                self.connector.start(addresses)
                self.connectNextAddress()
            case .failure(.refused(let e)):
                self.failToConnect(.egressRefused(e), .refused)
            case .failure(.unresolvable(let detail)):
                self.failToConnect(.unresolvable(detail), .refused)
            }
        }
    }

    /// Dials the next resolved address. One that cannot even be dialled (no socket) goes to the
    /// machine like a refusal: the next address, or the 502 after the last.
    private func connectNextAddress() {
        let dial = connector.dialNext(isSelf: worker.context.isSelf, freeDescriptor: worker.closeOneIdleUpstream) { addr in
            let s = try Stream(loop: worker.loop, connectingTo: addr, timeout: worker.limits.connectTimeout)
            s.delegate = self
            upstream = s
            worker.upstreamOpened()
        }
        upstreamAddress = connector.current
        switch dial {
        case .dialling:
            break   // the stream reports the outcome (upstreamConnectEvent)
        case .ownListener(let addr):
            failToConnect(.ownListener(addr), .refused)
        case .failed(let error):
            failToConnect(.notDialled(error), .refused)
        }
    }

    /// The upstream stream's events while connecting.
    func upstreamConnectEvent(_ event: StreamEvent) {
        switch event {
        case .connected:
            perform(machine.upstreamConnected())
        case .writeTimeout, .readTimeout:
            failToConnect(.timedOut(upstreamAddress, worker.limits.connectTimeout), .timeout)
        case .error, .eof, .tlsFailed:
            var why: String?
            if case .error(let text) = event { why = text }
            if let addr = upstreamAddress {
                failToConnect(.refused(addr, why, retryAfter: nil), .refused)
            } else {
                failToConnect(.notDialled(why), .refused)
            }
        }
    }

    /// The fail-to-connect phase decides; this does it: the answer now (unresolvable, egress,
    /// a loop), or the machine's next address (its answer after the last).
    private func failToConnect(_ failure: ConnectFailure, _ kind: TunnelMachine.ConnectFailure) {
        switch worker.phases.failToConnect(failure, .tunnel(host: peer.host, port: peer.port)) {
        case .answer(let e):
            machine.refusedBeforeConnect()
            answerClient(e)
        case .retry(let e):
            connectAnswer = e
            perform(machine.connectFailed(kind, moreAddresses: connector.hasMore))
        }
    }

    /// The client gets `e` as a JSON error instead of a 200; the connection then closes.
    private func answerClient(_ e: GatewayError) {
        closeUpstream()
        answer = e
        let idText = id.description
        clientStream.write(ForwardingHeads.error(status: e.status, body: e.jsonBody(requestID: idText), keepAlive: false,
                                                 requestID: idText, retryAfter: e.retryAfter, error: e.reason))
        finish(.connectFailed)
    }

    // MARK: the end

    /// Performs what the machine decided.
    func perform(_ action: TunnelMachine.Action) {
        switch action {
        case .none:
            break
        case .tryNextAddress:
            closeUpstream()
            connectNextAddress()
        case .establish:
            establish()
        case .respondError(let f):
            // The fail-to-connect phase's answer for the last attempt (`failToConnect`).
            answerClient(connectAnswer ?? GatewayError(f == .timeout ? .upstreamTimeout : .upstreamRefused,
                                                       status: f == .timeout ? 504 : 502,
                                                       message: "cannot connect to \(peer.host):\(peer.port)",
                                                       source: .upstream))
        case .pauseReading(let side):
            stream(side).setReading(false)
        case .resumeReading(let side):
            relay(from: side)
            if !machine.isPaused(side), !machine.isClosed { stream(side).setReading(true) }
        case .shutdownWrite(let side):
            stream(side).shutdownOutput()
        case .shutdownWhenDrained(let side):
            stream(side).setWriteLowWatermark(0)
        case .close(let end):
            finish(end)
        }
    }

    /// The one way out: the upstream closes, the logging phase runs (once), the client
    /// connection closes (after its queued output on a clean end or an error answer). The
    /// tunnel stays alive until the next loop turn: the stream callback that ended it may
    /// still be on the stack.
    func finish(_ end: TunnelEnd) {
        guard reaper == nil else { return }
        idleTimer?.cancel()
        closeUpstream()
        worker.context.metrics.tunnelsOpen.decrement()
        worker.phases.logging(tunnel: self, end)
        let r = AirlockIO.Timer(loop: worker.loop) { [self] in self.reaper = nil }
        reaper = r
        r.schedule(after: .zero)
        clientStream.delegate = nil
        client.tunnelEnded(flush: end == .closed || end == .connectFailed)
    }

    func closeUpstream() {
        guard let u = upstream else { return }
        upstream = nil
        u.delegate = nil
        u.close()
        worker.upstreamClosed()
    }

    /// Draining, and the drain timeout passed.
    func abort() {
        perform(machine.drainTimedOut())
    }

    /// `DELETE /tasks/{id}`: both sides closed at once; the access record says `cancelled`.
    func cancel() {
        perform(machine.cancelled())
    }

    /// The tunnel as `GET /tasks` lists it: `connecting` until the 200, then `tunneling`; bytes
    /// client → upstream as upload, upstream → client as download (no expected totals).
    func snapshot(worker: Int, now: UInt64) -> TaskSnapshot {
        TaskSnapshot(id: id.description, worker: worker, route: route.config.name, method: "CONNECT", url: peer.target,
                     state: machine.isClosed ? .completed : machine.wasEstablished ? .tunneling : .connecting,
                     upload: TaskProgress(done: bytesUp, expected: nil), download: TaskProgress(done: bytesDown, expected: nil),
                     ageMillis: Double((now &- started) / 1000) / 1000)
    }
}
