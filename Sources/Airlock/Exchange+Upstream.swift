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
/// address, a retry, an answer). The connection's own events arrive here through the client
/// connection, its `UpstreamOwner`.
extension Exchange {
    /// `Retry-After` for the failure that left the route's circuit open (the refusal or the
    /// timeout that found the upstream down says when to come back, as the 503s after it do);
    /// nil while it is closed, and on `origin` routes.
    private var circuitRetryAfter: Int? {
        routeRef.health?.isUnreachable == true ? worker.context.config.reachability.retryAfterSeconds : nil
    }

    /// A passive reachability signal from a request's own connection attempt (a failure
    /// carries how long ago its connect began).
    func reportReachability(_ signal: Reachability.Signal) {
        var age: UInt64?
        if case .failed = signal, metrics.connectStart != 0 { age = (EventLoop.nowNanos() &- metrics.connectStart) / 1_000_000 }
        if let h = routeRef.health {
            h.record(signal, attemptAgeMillis: age)
        } else if routeRef.fixedKey == nil {
            worker.context.reachability.recordOrigin("\(key.host):\(key.port)", signal, attemptAgeMillis: age)
        }
    }

    // MARK: connect

    func connectUpstream() {
        // The connection that served this client last, if it is still idle in the pool (a
        // preference only: another client may have taken it), else the pool's most recent.
        if var pooled = worker.checkoutUpstream(key, preferring: client.lastUpstream) {
            if !worker.phases.egressAllows(pooled.address, route: routeRef) {
                // Opened for a route with a wider egress policy: not for this one. The
                // resolve below checks the addresses afresh (and answers 403 if none is left).
                pooled.close()
                guard let other = worker.checkoutUpstream(key, preferring: nil),
                      worker.phases.egressAllows(other.address, route: routeRef) else {
                    return resolveAndConnect()
                }
                pooled = other
            }
            if holdsSlot {   // woken with a slot, but an idle connection is here: no new one
                holdsSlot = false
                worker.releaseSlot(key)
            }
            attach(pooled)
            return
        }
        if worker.connectionShare > 0 && !holdsSlot {
            switch worker.admit(self, client: client) {
            case .connect: holdsSlot = true
            case .wait: return
            case .busy:
                failExchange(.upstreamBusy(key, timedOut: false, limits: limits))
                return
            }
        }
        resolveAndConnect()
    }

    /// Resolves the upstream, keeps the addresses the route's egress policy allows, and
    /// dials the first (`UpstreamConnector`).
    private func resolveAndConnect() {
        metrics.dnsStart = EventLoop.nowNanos()
        let phases = worker.phases
        UpstreamConnector.resolve(worker.resolver, host: key.host, port: key.port, filter: { [id, key, route = routeRef] in
            phases.egressFilter($0, host: key.host, port: key.port, route: route, id: id)
        }) { [weak self] result in
            guard let self, self.isCurrent, self.client.phase == .forwarding else { return }
            self.metrics.dnsEnd = EventLoop.nowNanos()
            switch result {
            case .success(let addresses):
                self.connector.start(addresses)
                self.connectNextAddress()
            case .failure(.refused(let e)):
                self.failToConnect(.egressRefused(e))   // the exchange's end returns its slot
            case .failure(.unresolvable(let detail)):
                self.failToConnect(.unresolvable(detail))
            }
        }
    }

    /// Dials the next resolved address. One that cannot even be dialled (no socket) goes to the
    /// machine like a refusal: the next address, or the 502 after the last.
    func connectNextAddress() {
        let dial = connector.dialNext(isSelf: worker.context.isSelf, freeDescriptor: worker.closeOneIdleUpstream) { addr in
            self.metrics.connectStart = EventLoop.nowNanos()
            self.upstream = try UpstreamConnection(worker: worker, key: key, address: addr, owner: client,
                                                 security: key.scheme == "https" ? route.security : nil,
                                                 metrics: routeRef.metrics)
        }
        lastUpstreamAddress = connector.current
        switch dial {
        case .dialling:
            break   // upstreamConnected or upstreamFailed follows
        case .ownListener(let addr):
            failToConnect(.ownListener(addr))
        case .failed(let lastError):
            failToConnect(.notDialled(lastError))
        }
    }

    /// The fail-to-connect phase decides; this does it: the answer now, or the machine's
    /// next address (the answer after the last).
    private func failToConnect(_ failure: ConnectFailure) {
        switch worker.phases.failToConnect(failure, .upstream(key)) {
        case .answer(let e):
            failExchange(e)
        case .retry(let e):
            run(machine.connectFailed(moreAddresses: connector.hasMore)) { e }
        }
    }

    private func attach(_ u: UpstreamConnection) {
        upstream = u
        lastUpstreamAddress = u.address
        u.activate(owner: client, timeouts: worker.upstreamActiveTimeouts, writeLowWatermark: ClientConnection.writeHighWatermark / 2)
        expectSplice(u)
        metrics.reused = u.isReused
        run(machine.upstreamReady(reused: u.isReused))   // .sendRequestHead
    }

    func upstreamConnected(_ u: UpstreamConnection) {
        guard upstream === u else { u.close(); return }
        connectedAt = EventLoop.nowNanos()
        metrics.connectEnd = connectedAt
        let tlsStart = u.handshakeStartedAt   // 0 on plain upstreams
        if tlsStart != 0 {
            metrics.secureStart = tlsStart
            metrics.secureEnd = connectedAt
        }
        if holdsSlot {   // the new connection holds the slot from now on
            holdsSlot = false
            u.holdsSlot = true
        }
        if let m = routeRef.metrics, metrics.connectStart != 0 {
            let tcpUp = tlsStart != 0 ? tlsStart : connectedAt
            m.connect.recordNanoseconds(Int64(tcpUp &- metrics.connectStart))
            if tlsStart != 0 { m.tls.recordNanoseconds(Int64(connectedAt &- tlsStart)) }
        }
        reportReachability(.connected)
        attach(u)
    }

    func sendRequestHead() {
        guard let u = upstream else { return }
        // Serialized into the worker's reusable writer, straight from the parsed model.
        worker.headWriter.reset()
        // The upstream request filter's head: the route's serializer's, or the canonical one.
        worker.phases.upstreamRequestHead(self, into: &worker.headWriter)
        worker.headWriter.withBytes { u.send($0) }
        if let body = replacementBody, !body.bytes.isEmpty { body.bytes.withUnsafeBytes { u.send($0) } }
        metrics.requestSent = EventLoop.nowNanos()   // the head; the body's end moves it on
        pumpRequestBody()
    }

    /// The upstream connection failed (connect, TLS, timeout, close). After the response head
    /// it is the body's end (`upstreamEndedDuringBody`); before it, the machine decides: wait on
    /// (an upload still moving), the next address, once more on a fresh connection, or an answer.
    func upstreamFailed(_ u: UpstreamConnection, event: StreamEvent) {
        guard upstream === u else { u.close(); return }
        if !machine.awaitingUpstreamHead {
            upstreamEndedDuringBody(u, event: event)
            return
        }
        let connecting = u.exchanges == 0
        if machine.isResuming, resumedUpstreamFailed(u, event: event, connecting: connecting) { return }
        switch event {
        case .tlsFailed(let why) where u.stream.tlsFailedBeforeServerHello:
            run(machine.upstreamFailed(.untrusted)) { .tlsHandshakeFailed(u.address.description, why) }
        case .tlsFailed(let why):
            let failure = TrustFailure(reason: .handshakeFailed, verifyError: nil, detail: why)
            run(machine.upstreamFailed(.untrusted)) { self.untrustedError(u, failure: failure, presented: []) }
        case .readTimeout, .writeTimeout:
            let action = event == .readTimeout ? machine.upstreamReadTimedOut(bodyBytesSent: bytesIn)
                : machine.upstreamFailed(.timeout)
            run(action) {
                if connecting { self.reportReachability(.failed("connect to \(u.address) timed out")) }
                var e = GatewayError(.upstreamTimeout, status: ExchangeMachine.UpstreamFailure.timeout.status,
                                     message: "upstream \(u.address) timed out (\(connecting ? "connect" : "response"))",
                                     source: .upstream)
                e.retryAfter = self.circuitRetryAfter
                return e
            }
        case .error(let why) where connecting:
            reportReachability(.refused("\(u.address): \(why)"))
            failToConnect(.refused(u.address, why, retryAfter: circuitRetryAfter))
        case .eof, .error, .connected:   // an error after the connect: it closed on the request
            run(machine.upstreamFailed(.closed)) {
                GatewayError(.upstreamClosed, status: ExchangeMachine.UpstreamFailure.closed.status,
                             message: "upstream \(u.address) closed the connection before responding", source: .upstream)
            }
        }
    }

    /// The security policy refused the upstream (or its handshake failed): the request
    /// never left; the client gets 502 untrusted-upstream and the log a reject record with
    /// the pins of every certificate presented, so an operator sees at once what changed.
    func upstreamUntrusted(_ u: UpstreamConnection, failure: TrustFailure, presented: [PeerCertificate]) {
        if upstream === u { upstream = nil }
        run(machine.upstreamFailed(.untrusted)) { untrustedError(u, failure: failure, presented: presented) }
    }

    /// The `upstream.rejected` record and counter, and the client's 502 untrusted-upstream.
    private func untrustedError(_ u: UpstreamConnection, failure: TrustFailure,
                                presented: [PeerCertificate]) -> GatewayError {
        var md: Logger.Metadata = [
            "request_id": .stringConvertible(id),
            "route": .string(route.name),
            "host": .string(key.host),
            "upstream": .string(u.address.description),
            "reason": .string(failure.reason.rawValue),
            "code": .stringConvertible(failure.code),
            "pinning": .string(route.security.policy.mode.rawValue),
            "presented_pins": .array(presented.map { .string($0.pinText) }),
            "presented_subjects": .array(presented.map { .string($0.subject) }),
            "detail": .string(failure.detail),
        ]
        if let v = failure.verifyError { md["verify_error"] = .string(v) }
        worker.logger.error("upstream.rejected", metadata: md)
        worker.context.metrics.untrusted(route: route.name, reason: failure.reason.rawValue)
        let security = route.security
        var e = GatewayError(.untrustedUpstream, status: ExchangeMachine.UpstreamFailure.untrusted.status,
                             message: failure.message(host: key.host, pinned: security.policy.mode != .none,
                                                      privateCA: !security.caFiles.isEmpty),
                             source: .upstream)
        e.extra = [("reason", .string(failure.reason.rawValue)), ("code", .int(failure.code))]
        return e
    }
}
