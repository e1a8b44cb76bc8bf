import AirlockSerialization
import CoreMetrics
import AirlockIO
import AirlockSecurity
import AirlockSession
import Logging
import AirlockWire

/// Phases before any byte goes upstream: request filter (limits, loops, routes), the
/// upstream peer, and the connection to it.
extension ClientConnection: UpstreamOwner {
    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// A parsed request head, through the phases before any byte goes upstream: request
    /// filter, (request serializer: today `ForwardingHeads`' canonical re-encoding, in
    /// `sendRequestHead`), upstream peer; then the connection to it.
    func dispatch(_ req: RequestHead) {
        var id = worker.nextRequestID()
        id.client = RequestIDField.clientID(in: req.headers)
        let phases = worker.phases
        if let e = phases.requestFilter(req) {
            respondError(e, exchange: nil, requestID: id, request: req)
            return
        }
        if req.method == .connect {
            if interception != nil {
                respondError(GatewayError(.connectInsideIntercept, status: 400,
                                          message: "a CONNECT inside an intercepted tunnel is not allowed",
                                          source: .client, mustClose: true),
                             exchange: nil, requestID: id, request: req)
                return
            }
            dispatchConnect(req, id: id)
            return
        }
        let peer: UpstreamPeer
        switch interception.map({ phases.interceptedPeer(req, $0) }) ?? phases.upstreamPeer(req) {
        case .success(let p): peer = p
        case .failure(let e):
            respondError(e, exchange: nil, requestID: id, request: req)
            return
        }
        let route = peer.route
        let ex = Exchange(id: id, request: req, route: route, key: peer.key, limits: worker.wireLimits)
        worker.context.metrics.inFlight.increment()
        exchange = ex
        lifecycle.dispatched()
        if let timeout = route.exchangeTimeout { armDeadline(ex, after: timeout) }
        if req.framing == .chunked && stream.inputLength > 0 {
            // Body bytes that came with the head are checked before an upstream is chosen: a
            // chunked body already broken gets its 400 with no upstream connection at all.
            do throws(WireError) {
                try stream.withInput(max: stream.inputLength) { buf throws(WireError) in try ex.requestDecoder.precheck(buf) }
            } catch {
                run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
                return
            }
        }
        if route.requestSerializer != nil {
            // The upstream request filter (the route's request serializer), before any
            // upstream is chosen.
            switch phases.upstreamRequestFilter(ex) {
            case .proceed:
                break
            case .refuse(let e, let reason, let message):
                ex.requestRejection = RequestRejection(reason: reason, message: message, bodySample: bufferedBodySample(req.framing))
                respondError(e, exchange: ex, requestID: id)
                return
            }
        }
        if let h = route.health, h.isUnreachable {
            switch h.admit() {
            case .failFast:
                failExchange(Self.unreachable(h, retryAfter: worker.context.config.reachability.retryAfterSeconds))
                return
            case .trial: ex.reachabilityTrial = true
            case .proceed: break
            }
        }
        if req.expectsContinue && req.version == .http11 && !ex.requestBodyDone {
            // We take the body ourselves (and stream it); the upstream never sees Expect.
            stream.write(Self.continueResponse)
        }
        post(.resumed, ex)
        if ex.collected != nil {
            collectRequestBody(ex)   // connects once the body is whole and rebuilt
            return
        }
        // Hold the client's body until the upstream is ready for it.
        connectUpstream(ex)
    }

    /// 400 request-serialization-failed: the route's serializer cannot build the request;
    /// nothing reached the upstream.
    /// `sample`: the first bytes of the refused body, for its `request.rejected` record.
    func serializationRefused(_ ex: Exchange, _ why: RequestSerializationError, sample: [UInt8]) {
        var e = GatewayError(.requestSerializationFailed, status: 400, message: why.message, source: .client)
        e.extra = [("reason", .string(why.reason))]
        ex.requestRejection = RequestRejection(reason: why.reason, message: why.message, bodySample: sample)
        respondError(e, exchange: ex, requestID: ex.id)
    }

    /// Reads the client's body whole (bounded by `limits.body_bytes`) for a serializer that
    /// rebuilds it, then connects with the rebuilt body. Called again as more arrives.
    func collectRequestBody(_ ex: Exchange) {
        guard let s = ex.routeRef.requestSerializer, var body = ex.collected else { return }
        ex.collected = nil
        do throws(WireError) {
            while !ex.requestDecoder.isComplete {
                let available = stream.inputLength
                let event = try stream.withInput(max: BodyDecoder.maxLineBytes) { buf throws(WireError) in
                    try ex.requestDecoder.next(buf, available: available)
                }
                switch event {
                case .data(let n):
                    guard body.count + n <= limits.bodyBytes else {
                        run(ex.machine.requestBodyFailed(), ex) {
                            GatewayError(.bodyTooLarge, status: 413, message: "request body exceeds the limit of \(self.limits.bodyBytes)",
                                         source: .client, mustClose: true)
                        }
                        return
                    }
                    stream.withInput(max: n) { body.append(contentsOf: $0) }
                    stream.drainInput(n)
                    ex.bytesIn += UInt64(n)
                case .framing(let n), .end(let n):
                    stream.drainInput(n)
                case .needMore:
                    ex.collected = body
                    if lifecycle.input == .halfClosed {
                        run(ex.machine.requestBodyCutOff(), ex)   // it will never be whole
                    }
                    return
                }
            }
        } catch {
            run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
            return
        }
        run(ex.machine.requestBodyBuffered(), ex)
        switch s.transform(collected: body, clientContentType: ex.request.headers.first(.contentType), method: ex.request.method.name) {
        case .replace(let r): ex.replacementBody = r
        case .relay, .collect: ex.replacementBody = .init(body, contentType: "application/octet-stream", replacesClientType: false)
        case .refuse(let why):
            serializationRefused(ex, why, sample: Array(body.prefix(RequestRejection.sampleLimit)))
            return
        }
        connectUpstream(ex)
    }


    /// The first bytes of the request body already buffered behind the head, at most
    /// `RequestRejection.sampleLimit` (a chunked body's sample includes its chunk framing).
    private func bufferedBodySample(_ framing: BodyFraming) -> [UInt8] {
        var limit = RequestRejection.sampleLimit
        switch framing {
        case .none: return []
        case .length(let n): limit = Int(min(n, UInt64(limit)))
        case .chunked, .closeDelimited: break
        }
        return stream.withInput(max: min(limit, stream.inputLength)) { Array($0) }
    }

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
    /// dials the first.
    private func resolveAndConnect(_ ex: Exchange) {
        ex.metrics.dnsStart = EventLoop.nowNanos()
        worker.resolver.resolve(host: ex.key.host, port: ex.key.port) { [weak self, weak ex] result in
            guard let self, let ex, self.exchange === ex, self.phase == .forwarding else { return }
            ex.metrics.dnsEnd = EventLoop.nowNanos()
            switch result {
            case .success(let resolved):
                let addrs: [SocketAddress]
                switch self.worker.phases.egressFilter(resolved, host: ex.key.host, port: ex.key.port,
                                                        route: ex.routeRef, id: ex.id) {
                case .success(let allowed): addrs = allowed
                case .failure(let e):
                    self.failExchange(e)   // the exchange's end returns its slot
                    return
                }
                ex.addresses = addrs
                ex.addressIndex = 0
                self.connectNextAddress(ex)
            case .failure(let err):
                let e = GatewayError(.upstreamUnresolvable, status: 502,
                                     message: "cannot resolve upstream \(ex.key.host): \(err.detail)", source: .upstream)
                self.failExchange(e)
            }
        }
    }

    /// Dials the next resolved address. One that cannot even be dialled (no socket) goes to the
    /// machine like a refusal: the next address, or the 502 after the last.
    func connectNextAddress(_ ex: Exchange) {
        guard ex.addressIndex < ex.addresses.count else {
            run(ex.machine.connectFailed(moreAddresses: false), ex) { self.cannotConnect(ex, nil) }
            return
        }
        let addr = ex.addresses[ex.addressIndex]
        ex.addressIndex += 1
        ex.lastUpstreamAddress = addr
        if worker.context.isSelf(addr) {
            let e = GatewayError(.loopDetected, status: 508,
                                 message: "upstream \(addr) is this gateway's own listener", source: .client)
            failExchange(e)
            return
        }
        ex.metrics.connectStart = EventLoop.nowNanos()
        let lastError: String
        do {
            let u = try UpstreamConnection(worker: worker, key: ex.key, address: addr, owner: self,
                                           security: ex.key.scheme == "https" ? ex.route.security : nil,
                                           metrics: ex.routeRef.metrics)
            ex.upstream = u
            return
        } catch let e as IOError where e.isDescriptorExhaustion && worker.closeOneIdleUpstream() {
            // Idle pooled connections give way to a request that needs a descriptor now.
            ex.addressIndex -= 1
            lastError = e.description
        } catch {
            lastError = "\(error)"
        }
        run(ex.machine.connectFailed(moreAddresses: ex.addressIndex < ex.addresses.count), ex) { cannotConnect(ex, lastError) }
    }

    private func cannotConnect(_ ex: Exchange, _ lastError: String?) -> GatewayError {
        GatewayError(.upstreamRefused, status: ExchangeMachine.UpstreamFailure.refused.status,
                     message: "cannot connect to upstream \(ex.key.host):\(ex.key.port)" + (lastError.map { " (\($0))" } ?? ""),
                     source: .upstream)
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
        let host = ex.routeRef.fixedHostField ?? ForwardingHeads.authority(ex.key)
        if let s = ex.routeRef.requestSerializer {
            // The request phase: the route's serializer rebuilds the head (and maybe the body).
            ForwardingHeads.request(ex.request, serializer: s, body: ex.replacementBody, host: host,
                                    framing: ex.requestOut, viaToken: worker.context.viaToken,
                                    viaToken11: worker.context.via11, idSerial: ex.id.serial, clientID: ex.id.client,
                                    idPrefix: worker.idPrefix, into: &worker.headWriter)
        } else {
            ForwardingHeads.request(ex.request, host: host, framing: ex.requestOut, viaToken: worker.context.viaToken,
                                    viaToken11: worker.context.via11, idSerial: ex.id.serial, clientID: ex.id.client,
                                    idPrefix: worker.idPrefix, into: &worker.headWriter)
        }
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
            run(ex.machine.connectFailed(moreAddresses: ex.addressIndex < ex.addresses.count), ex) {
                var e = GatewayError(.upstreamRefused, status: ExchangeMachine.UpstreamFailure.refused.status,
                                     message: "upstream \(u.address) refused the connection: \(why)", source: .upstream)
                e.retryAfter = self.circuitRetryAfter(ex)
                return e
            }
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
        var e = GatewayError(.untrustedUpstream, status: ExchangeMachine.UpstreamFailure.untrusted.status,
                             message: failure.message(host: ex.key.host), source: .upstream)
        e.extra = [("reason", .string(failure.reason.rawValue)), ("code", .int(failure.code))]
        return e
    }
}
