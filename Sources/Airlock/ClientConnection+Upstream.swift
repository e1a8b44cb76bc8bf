import AirlockConfig
import AirlockSerialization
import CoreMetrics
import AirlockIO
import AirlockSecurity
import AirlockSession
import AirlockWire
import Logging

/// The exchange's upstream connection: a pooled one, or a new one through the shared
/// `UpstreamConnector` (resolve, egress filter, the next address), the request head sent on
/// it, and its failures reported to the machine, which decides what follows (the next
/// address, a retry, an answer). The connection's own events arrive here (`UpstreamOwner`).
extension ClientConnection: UpstreamOwner {
    /// 503 upstream-unreachable with `Retry-After` (`reachability.retry_after` in seconds, at
    /// least one): the route's upstream failed its last probe or refused a connection, and the
    /// circuit is open (or its one trial is in flight), so the request fails fast instead of
    /// waiting for a connect that will fail.
    static func unreachable(_ h: UpstreamHealth, retryAfter: Int) -> GatewayError {
        let snapshot = h.snapshot
        var e = GatewayError(.upstreamUnreachable, status: 503,
                             message: "upstream \(h.upstream) is unreachable" + (snapshot.lastError.map { " (\($0))" } ?? ""),
                             source: .upstream)
        e.extra = [("upstream", .string(h.upstream))]
        e.retryAfter = retryAfter
        return e
    }

    /// 503 upstream-busy: this upstream has `max_connections_per_upstream` connections and the
    /// queue for one is full, or this request waited `upstream_queue_timeout` in it.
    static func upstreamBusy(_ ex: Exchange, timedOut: Bool, limits: LimitsConfig) -> GatewayError {
        let why = timedOut ? "no connection to it came free within \(limits.upstreamQueueTimeout)"
            : "the queue for a connection to it is full"
        var e = GatewayError(.upstreamBusy, status: 503,
                             message: "upstream \(ex.key.host):\(ex.key.port) has max_connections_per_upstream "
                                 + "(\(limits.maxConnectionsPerUpstream)) connections and \(why)", source: .upstream)
        e.extra = [("reason", .string(timedOut ? "queue-timeout" : "queue-full"))]
        e.retryAfter = 1
        return e
    }

    /// `Retry-After` for the failure that left the route's circuit open (the refusal or the
    /// timeout that found the upstream down says when to come back, as the 503s after it do);
    /// nil while it is closed, and on `origin` routes.
    private func circuitRetryAfter(_ ex: Exchange) -> Int? {
        ex.routeRef.health?.isUnreachable == true ? worker.context.config.reachability.retryAfterSeconds : nil
    }

    /// A passive reachability signal from a request's own connection attempt.
    func reportReachability(_ ex: Exchange, _ signal: Reachability.Signal) {
        if let h = ex.routeRef.health {
            h.record(signal)
        } else if ex.routeRef.fixedKey == nil {
            worker.context.reachability.recordOrigin("\(ex.key.host):\(ex.key.port)", signal)
        }
    }

    // MARK: connect

    func connectUpstream(_ ex: Exchange) {
        // The connection that served this client last, if it is still idle in the pool (a
        // preference only: another client may have taken it), else the pool's most recent.
        if var pooled = worker.checkoutUpstream(ex.key, preferring: lastUpstream) {
            if !worker.phases.egressAllows(pooled.address, route: ex.routeRef) {
                // Opened for a route with a wider egress policy: not for this one. The
                // resolve below checks the addresses afresh (and answers 403 if none is left).
                pooled.close()
                guard let other = worker.checkoutUpstream(ex.key, preferring: nil),
                      worker.phases.egressAllows(other.address, route: ex.routeRef) else {
                    return resolveAndConnect(ex)
                }
                pooled = other
            }
            if ex.holdsSlot {   // woken with a slot, but an idle connection is here: no new one
                ex.holdsSlot = false
                worker.releaseSlot(ex.key)
            }
            attach(pooled, to: ex)
            return
        }
        if worker.connectionShare > 0 && !ex.holdsSlot {
            switch worker.admit(ex, client: self) {
            case .connect: ex.holdsSlot = true
            case .wait: return
            case .busy:
                failExchange(Self.upstreamBusy(ex, timedOut: false, limits: limits))
                return
            }
        }
        resolveAndConnect(ex)
    }

    /// Resolves the upstream, keeps the addresses the route's egress policy allows, and
    /// dials the first (`UpstreamConnector`).
    private func resolveAndConnect(_ ex: Exchange) {
        ex.metrics.dnsStart = EventLoop.nowNanos()
        let phases = worker.phases
        UpstreamConnector.resolve(worker.resolver, host: ex.key.host, port: ex.key.port, filter: { [id = ex.id, key = ex.key, route = ex.routeRef] in
            phases.egressFilter($0, host: key.host, port: key.port, route: route, id: id)
        }) { [weak self, weak ex] result in
            guard let self, let ex, self.exchange === ex, self.phase == .forwarding else { return }
            ex.metrics.dnsEnd = EventLoop.nowNanos()
            switch result {
            case .success(let addresses):
                ex.connector.start(addresses)
                self.connectNextAddress(ex)
            case .failure(.refused(let e)):
                self.failToConnect(ex, .egressRefused(e))   // the exchange's end returns its slot
            case .failure(.unresolvable(let detail)):
                self.failToConnect(ex, .unresolvable(detail))
            }
        }
    }

    /// Dials the next resolved address. One that cannot even be dialled (no socket) goes to the
    /// machine like a refusal: the next address, or the 502 after the last.
    func connectNextAddress(_ ex: Exchange) {
        let dial = ex.connector.dialNext(isSelf: worker.context.isSelf, freeDescriptor: worker.closeOneIdleUpstream) { addr in
            ex.metrics.connectStart = EventLoop.nowNanos()
            ex.upstream = try UpstreamConnection(worker: worker, key: ex.key, address: addr, owner: self,
                                                 security: ex.key.scheme == "https" ? ex.route.security : nil,
                                                 metrics: ex.routeRef.metrics)
        }
        ex.lastUpstreamAddress = ex.connector.current
        switch dial {
        case .dialling:
            break   // upstreamConnected or upstreamFailed follows
        case .ownListener(let addr):
            failToConnect(ex, .ownListener(addr))
        case .failed(let lastError):
            failToConnect(ex, .notDialled(lastError))
        }
    }

    /// The fail-to-connect phase decides; this does it: the answer now, or the machine's
    /// next address (the answer after the last).
    private func failToConnect(_ ex: Exchange, _ failure: ConnectFailure) {
        switch worker.phases.failToConnect(failure, key: ex.key) {
        case .answer(let e):
            failExchange(e)
        case .retry(let e):
            run(ex.machine.connectFailed(moreAddresses: ex.connector.hasMore), ex) { e }
        }
    }

    private func attach(_ u: UpstreamConnection, to ex: Exchange) {
        ex.upstream = u
        ex.lastUpstreamAddress = u.address
        u.activate(owner: self, timeouts: worker.upstreamActiveTimeouts, writeLowWatermark: Self.writeHighWatermark / 2)
        ex.metrics.reused = u.isReused
        run(ex.machine.upstreamReady(reused: u.isReused), ex)   // .sendRequestHead
    }

    func upstreamConnected(_ u: UpstreamConnection) {
        guard let ex = exchange, ex.upstream === u else { u.close(); return }
        ex.connectedAt = EventLoop.nowNanos()
        ex.metrics.connectEnd = ex.connectedAt
        let tlsStart = u.handshakeStartedAt   // 0 on plain upstreams
        if tlsStart != 0 {
            ex.metrics.secureStart = tlsStart
            ex.metrics.secureEnd = ex.connectedAt
        }
        if ex.holdsSlot {   // the new connection holds the slot from now on
            ex.holdsSlot = false
            u.holdsSlot = true
        }
        if let m = ex.routeRef.metrics, ex.metrics.connectStart != 0 {
            let tcpUp = tlsStart != 0 ? tlsStart : ex.connectedAt
            m.connect.recordNanoseconds(Int64(tcpUp &- ex.metrics.connectStart))
            if tlsStart != 0 { m.tls.recordNanoseconds(Int64(ex.connectedAt &- tlsStart)) }
        }
        reportReachability(ex, .connected)
        attach(u, to: ex)
    }

    func sendRequestHead(_ ex: Exchange) {
        guard let u = ex.upstream else { return }
        // Serialized into the worker's reusable writer, straight from the parsed model.
        worker.headWriter.reset()
        // The upstream request filter's head: the route's serializer's, or the canonical one.
        worker.phases.upstreamRequestHead(ex, into: &worker.headWriter)
        worker.headWriter.withBytes { u.send($0) }
        if let body = ex.replacementBody, !body.bytes.isEmpty { body.bytes.withUnsafeBytes { u.send($0) } }
        ex.metrics.requestSent = EventLoop.nowNanos()   // the head; the body's end moves it on
        pumpRequestBody()
    }

    /// The upstream connection failed (connect, TLS, timeout, close). After the response head
    /// it is the body's end (`upstreamEndedDuringBody`); before it, the machine decides: wait on
    /// (an upload still moving), the next address, once more on a fresh connection, or an answer.
    func upstreamFailed(_ u: UpstreamConnection, event: StreamEvent) {
        guard let ex = exchange, ex.upstream === u else { u.close(); return }
        if !ex.machine.awaitingResponseHead {
            upstreamEndedDuringBody(ex, u, event: event)
            return
        }
        let connecting = u.exchanges == 0
        switch event {
        case .tlsFailed(let why) where u.stream.tlsFailedBeforeServerHello:
            run(ex.machine.upstreamFailed(.untrusted), ex) { .tlsHandshakeFailed(u.address.description, why) }
        case .tlsFailed(let why):
            let failure = TrustFailure(reason: .handshakeFailed, verifyError: nil, detail: why)
            run(ex.machine.upstreamFailed(.untrusted), ex) { self.untrustedError(ex, u, failure: failure, presented: []) }
        case .readTimeout, .writeTimeout:
            let action = event == .readTimeout ? ex.machine.upstreamReadTimedOut(bodyBytesSent: ex.bytesIn)
                : ex.machine.upstreamFailed(.timeout)
            run(action, ex) {
                if connecting { self.reportReachability(ex, .failed("connect to \(u.address) timed out")) }
                var e = GatewayError(.upstreamTimeout, status: ExchangeMachine.UpstreamFailure.timeout.status,
                                     message: "upstream \(u.address) timed out (\(connecting ? "connect" : "response"))",
                                     source: .upstream)
                e.retryAfter = self.circuitRetryAfter(ex)
                return e
            }
        case .error(let why) where connecting:
            reportReachability(ex, .refused("\(u.address): \(why)"))
            failToConnect(ex, .refused(u.address, why, retryAfter: circuitRetryAfter(ex)))
        default:
            run(ex.machine.upstreamFailed(.closed), ex) {
                GatewayError(.upstreamClosed, status: ExchangeMachine.UpstreamFailure.closed.status,
                             message: "upstream \(u.address) closed the connection before responding", source: .upstream)
            }
        }
    }

    /// The security policy refused the upstream (or its handshake failed): the request
    /// never left; the client gets 502 untrusted-upstream and the log a reject record with
    /// the pins of every certificate presented, so an operator sees at once what changed.
    func upstreamUntrusted(_ u: UpstreamConnection, failure: TrustFailure, presented: [PeerCertificate]) {
        guard let ex = exchange else { return }
        if ex.upstream === u { ex.upstream = nil }
        run(ex.machine.upstreamFailed(.untrusted), ex) { untrustedError(ex, u, failure: failure, presented: presented) }
    }

    /// The `upstream.rejected` record and counter, and the client's 502 untrusted-upstream.
    private func untrustedError(_ ex: Exchange, _ u: UpstreamConnection, failure: TrustFailure,
                                presented: [PeerCertificate]) -> GatewayError {
        var md: Logger.Metadata = [
            "request_id": .stringConvertible(ex.id),
            "route": .string(ex.route.name),
            "host": .string(ex.key.host),
            "upstream": .string(u.address.description),
            "reason": .string(failure.reason.rawValue),
            "code": .stringConvertible(failure.code),
            "pinning": .string(ex.route.security.policy.mode.rawValue),
            "presented_pins": .array(presented.map { .string($0.pinText) }),
            "presented_subjects": .array(presented.map { .string($0.subject) }),
            "detail": .string(failure.detail),
        ]
        if let v = failure.verifyError { md["verify_error"] = .string(v) }
        logger.error("upstream.rejected", metadata: md)
        worker.context.metrics.untrusted(route: ex.route.name, reason: failure.reason.rawValue)
        let security = ex.route.security
        var e = GatewayError(.untrustedUpstream, status: ExchangeMachine.UpstreamFailure.untrusted.status,
                             message: failure.message(host: ex.key.host, pinned: security.policy.mode != .none,
                                                      privateCA: !security.caFiles.isEmpty),
                             source: .upstream)
        e.extra = [("reason", .string(failure.reason.rawValue)), ("code", .int(failure.code))]
        return e
    }
}
