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
    /// The last failed connect attempt's event (its error text goes into the 502).
    private var lastConnectError: StreamEvent?
    /// Set when the last address could not even be dialled (no socket): its error, for the 502.
    private var lastDialError: String?
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
                self.refuse(e)
            case .failure(.unresolvable(let detail)):
                self.refuse(GatewayError(.upstreamUnresolvable, status: 502,
                                         message: "cannot resolve \(peer.host): \(detail)", source: .upstream))
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
            lastDialError = nil   // the stream reports the outcome (upstreamConnectEvent)
        case .ownListener(let addr):
            refuse(GatewayError(.loopDetected, status: 508,
                                message: "CONNECT target \(addr) is this gateway's own listener", source: .client))
        case .failed(let error):
            lastDialError = error ?? ""
            perform(machine.connectFailed(.refused, moreAddresses: connector.hasMore))
        }
    }

    /// The upstream stream's events while connecting.
    func upstreamConnectEvent(_ event: StreamEvent) {
        switch event {
        case .connected:
            perform(machine.upstreamConnected())
        case .writeTimeout, .readTimeout:
            perform(machine.connectFailed(.timeout, moreAddresses: connector.hasMore))
        default:
            lastConnectError = event
            perform(machine.connectFailed(.refused, moreAddresses: connector.hasMore))
        }
    }

    /// Refused before any connect (unresolvable, a loop).
    private func refuse(_ e: GatewayError) {
        machine.refusedBeforeConnect()
        answerClient(e)
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

    /// The error for a failed connect: 504 after connect_timeout, 502 refused.
    func connectError(_ f: TunnelMachine.ConnectFailure) -> GatewayError {
        let addr = upstreamAddress?.description ?? "\(peer.host):\(peer.port)"
        switch f {
        case .timeout:
            return GatewayError(.upstreamTimeout, status: 504,
                                message: "connect to \(addr) timed out after \(worker.limits.connectTimeout)", source: .upstream)
        case .refused:
            if let dial = lastDialError {
                return GatewayError(.upstreamRefused, status: 502,
                                    message: "cannot connect to \(peer.host):\(peer.port)" + (dial.isEmpty ? "" : " (\(dial))"),
                                    source: .upstream)
            }
            var why = ""
            if case .error(let text)? = lastConnectError { why = ": \(text)" }
            return GatewayError(.upstreamRefused, status: 502, message: "\(addr) refused the connection\(why)",
                                source: .upstream)
        }
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
            answerClient(connectError(f))
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
