import AirlockConfig
import CoreMetrics
import AirlockIO
import AirlockSecurity
import AirlockSerialization
import AirlockSession
import AirlockWire
import Logging

/// The gateway's phases (see `ProxyPhases`) over one worker's `PhaseContext`: its routes,
/// limits and sinks. The worker keeps one (`Worker.phases`), made again on a reload; a test
/// makes one from a context of its own, with no loop and no socket.
final class GatewayPhases: ProxyPhases {
    let context: PhaseContext

    init(_ context: PhaseContext) { self.context = context }

    // MARK: request filter

    /// A CONNECT that declares a body, a declared body over `limits.body_bytes`, and a request
    /// that already passed through this gateway (its `Via` token).
    func requestFilter(_ req: RequestHead) -> GatewayError? {
        if req.method == .connect, req.framing != .none, req.framing != .length(0) {
            // Bytes behind a CONNECT head are the tunnel's (RFC 9110 9.3.6: a CONNECT body has
            // no defined meaning); a framed one would be relayed as tunnel data or lost.
            return GatewayError(.connectWithBody, status: 400,
                                message: "a CONNECT request must not declare a body (Content-Length or Transfer-Encoding)",
                                source: .client, mustClose: true)
        }
        let limit = context.bodyBytes
        if case .length(let n) = req.framing, n > UInt64(limit) {
            return GatewayError(.bodyTooLarge, status: 413,
                                message: "request body of \(n) bytes exceeds the limit of \(limit)",
                                source: .client, mustClose: true)
        }
        for v in req.headers.values(.via) where v.contains(context.viaToken) {
            return GatewayError(.loopDetected, status: 508,
                                message: "request already passed through this gateway (Via: \(context.viaToken))",
                                source: .client)
        }
        return nil
    }

    // MARK: upstream peer

    /// The first route matching host and path; its fixed upstream, or (an `origin` route) the
    /// scheme, host and port the request names.
    func upstreamPeer(_ req: RequestHead) -> Result<UpstreamPeer, GatewayError> {
        let path: String
        switch req.target {
        case .origin(let p): path = p
        case .absolute(_, _, _, let p): path = p
        default: path = "/"
        }
        let port = req.port ?? (Self.isHTTPS(req.target) ? 443 : 80)
        guard let route = context.routes.first(host: req.host, path: path, port: port) else {
            return .failure(GatewayError(.noRoute, status: 403, message: "no route for host \(req.host)", source: .client))
        }
        if let fixed = route.fixedKey { return .success(UpstreamPeer(route: route, key: fixed)) }
        var scheme = Scheme.http
        if case .absolute(let s, _, _, _) = req.target { scheme = s }
        let key = UpstreamKey(scheme: scheme.rawValue, host: req.host, port: req.port ?? (scheme == .https ? 443 : 80),
                              trust: scheme == .https ? route.config.security.trustIdentity : "")
        return .success(UpstreamPeer(route: route, key: key))
    }

    private static func isHTTPS(_ target: RequestTarget) -> Bool {
        if case .absolute(.https, _, _, _) = target { return true }
        return false
    }

    // MARK: connect peer

    /// The first route whose host (and `match.port`) matches the CONNECT authority and whose
    /// match names no path; its `connect:` policy, then its `connect_ports`. Every refusal
    /// closes the connection (what the client sent behind the head is not a request).
    func connectPeer(_ req: RequestHead) -> Result<ConnectPeer, GatewayError> {
        guard case .authority(let host, let port) = req.target else {
            return .failure(GatewayError(.badRequest, status: 400, message: "CONNECT without an authority-form target",
                                         source: .client, mustClose: true))
        }
        let target = "\(host):\(port)"
        guard let route = context.routes.first(connectHost: host, port: port) else {
            var e = GatewayError(.noRoute, status: 403, message: "no route for CONNECT \(target)", source: .client, mustClose: true)
            e.extra = [("host", .string(host))]
            return .failure(e)
        }
        let config = route.config
        switch config.connect {
        case .deny:
            var e = GatewayError(.connectDenied, status: 403,
                                 message: "route \(config.name) does not allow CONNECT to \(host) (connect: deny)",
                                 source: .client, mustClose: true)
            e.extra = [("host", .string(host)), ("route", .string(config.name))]
            return .failure(e)
        case .tunnel, .intercept:
            guard config.connectPorts.contains(port) else {
                let allowed = config.connectPorts.map(String.init).joined(separator: ", ")
                var e = GatewayError(.connectPortDenied, status: 403,
                                     message: "route \(config.name) allows CONNECT only to port(s) \(allowed), not \(port)",
                                     source: .client, mustClose: true)
                e.extra = [("host", .string(host)), ("port", .int(Int(port))), ("route", .string(config.name))]
                return .failure(e)
            }
        }
        var upstreamHost = host
        var upstreamPort = port
        if case .fixed(let t) = config.upstream {
            upstreamHost = t.host
            upstreamPort = t.port
        } else if upstreamHost.hasPrefix("[") {
            upstreamHost = String(upstreamHost.dropFirst().dropLast())
        }
        return .success(ConnectPeer(route: route, policy: config.connect, host: upstreamHost, port: upstreamPort,
                                    target: target))
    }

    // MARK: egress (between resolving and connecting)

    /// The addresses `route` may dial among those `host` resolved to, each checked against the
    /// route's egress policy before anything is dialled (so a name cannot switch to a denied
    /// address between check and connect). Our own listeners pass through: the loop check
    /// answers them (508). Denied addresses leave one `egress.denied` record (addresses and
    /// reasons: the body never names them) and count in `airlock_egress_denied_total`; when
    /// none is left the answer is 403 `egress-denied`.
    func egressFilter(_ addresses: [SocketAddress], host: String, port: UInt16, route: Route,
                      id: RequestID) -> Result<[SocketAddress], GatewayError> {
        var allowed: [SocketAddress] = []
        var denied: [(IPAddress, EgressPolicy.Reason)] = []
        allowed.reserveCapacity(addresses.count)
        for a in addresses {
            guard !context.isSelf(a), let ip = IPAddress(bytes: a.addressBytes) else {
                allowed.append(a)
                continue
            }
            switch route.egress.evaluate(ip) {
            case .allowed: allowed.append(a)
            case .denied(let reason): denied.append((ip, reason))
            }
        }
        guard !denied.isEmpty else { return .success(addresses) }
        let name = route.config.name
        context.metrics.egressDenied(route: name, reason: denied[0].1.rawValue)
        context.logger.warning("egress.denied", metadata: [
            "request_id": .stringConvertible(id),
            "route": .string(name),
            "host": .string(host),
            "port": .stringConvertible(Int(port)),
            "addresses": .array(denied.map { .string($0.0.description) }),   // IPv4-mapped as IPv4
            "reasons": .array(denied.map { .string($0.1.rawValue) }),
            "refused": .stringConvertible(allowed.isEmpty),
        ])
        guard allowed.isEmpty else { return .success(allowed) }
        var e = GatewayError(.egressDenied, status: 403,
                             message: "route \(name) does not allow connecting to \(host):\(port) (egress policy)",
                             source: .client)
        e.extra = [("host", .string(host)), ("route", .string(name))]
        return .failure(e)
    }

    /// Whether a pooled connection to `address` may carry `route`'s request: pooled
    /// connections are keyed by host and port, so another route with a wider policy may have
    /// opened it.
    func egressAllows(_ address: SocketAddress, route: Route) -> Bool {
        if route.egress.allowsAllDialable { return true }
        guard let ip = IPAddress(bytes: address.addressBytes) else { return true }
        return route.egress.evaluate(ip) == .allowed
    }

    // MARK: fail to connect

    /// A refused address or one that could not be dialled may be followed by the next
    /// (502 upstream-refused after the last); an unresolvable name (502), an egress refusal
    /// (403) and our own listener (508, a loop) are answered at once.
    func failToConnect(_ failure: ConnectFailure, _ subject: ConnectSubject) -> FailToConnectVerdict {
        // An exchange's answers say "upstream"; a tunnel's name the CONNECT target.
        let (host, port, tunnel): (String, UInt16, Bool)
        switch subject {
        case .upstream(let key): (host, port, tunnel) = (key.host, key.port, false)
        case .tunnel(let h, let p): (host, port, tunnel) = (h, p, true)
        }
        let upstream = tunnel ? "" : "upstream "
        switch failure {
        case .unresolvable(let detail):
            return .answer(GatewayError(.upstreamUnresolvable, status: 502,
                                        message: "cannot resolve \(upstream)\(host): \(detail)", source: .upstream))
        case .egressRefused(let e):
            return .answer(e)
        case .ownListener(let addr):
            return .answer(GatewayError(.loopDetected, status: 508,
                                        message: "\(tunnel ? "CONNECT target" : "upstream") \(addr) is this gateway's own listener",
                                        source: .client))
        case .notDialled(let lastError):
            return .retry(GatewayError(.upstreamRefused, status: ExchangeMachine.UpstreamFailure.refused.status,
                                       message: "cannot connect to \(upstream)\(host):\(port)" + (lastError.map { " (\($0))" } ?? ""),
                                       source: .upstream))
        case .refused(let addr, let why, let retryAfter):
            var e = GatewayError(.upstreamRefused, status: ExchangeMachine.UpstreamFailure.refused.status,
                                 message: "\(upstream)\(addr) refused the connection" + (why.map { ": \($0)" } ?? ""),
                                 source: .upstream)
            e.retryAfter = retryAfter
            return .retry(e)
        case .timedOut(let addr, let after):
            return .retry(GatewayError(.upstreamTimeout, status: ExchangeMachine.UpstreamFailure.timeout.status,
                                       message: "connect to \(addr?.description ?? "\(host):\(port)") timed out after \(after)",
                                       source: .upstream))
        }
    }

    // MARK: upstream request filter

    /// The route's request serializer: the body is relayed, replaced, or read whole first
    /// (`Exchange.replacementBody`, `Exchange.collected`); a `multipart/form-data` body on a
    /// `validate_multipart` route gets its validator; or the request is refused.
    func upstreamRequestFilter(_ ex: Exchange) -> RequestFilterVerdict {
        guard let s = ex.routeRef.requestSerializer else { return .proceed }
        let req = ex.request
        switch s.body(method: req.method.name, clientBodyEmpty: req.framing == .none || req.framing == .length(0)) {
        case .relay: break
        case .replace(let body): ex.replacementBody = body
        case .collect: ex.collected = []   // read whole before an upstream is chosen
        case .refuse(let why): return Self.refusal(why.reason, why.message)
        }
        if s.config.validateMultipart, ex.collected == nil, !ex.requestBodyDone,
           let type = req.headers.first(.contentType), MultipartBoundary.isFormData(contentType: type) {
            do throws(MultipartError) {
                ex.multipart = MultipartValidator(boundary: try MultipartBoundary(contentType: type))
            } catch {
                return Self.refusal(error.reason, error.message)
            }
        }
        return .proceed
    }

    /// A body read whole for the route's serializer (`Exchange.collected`), rebuilt: it
    /// becomes the exchange's replacement body (the client's bytes as they came when the
    /// serializer keeps them), or the request is refused.
    func upstreamRequestBodyFilter(_ ex: Exchange, collected body: [UInt8]) -> RequestFilterVerdict {
        guard let s = ex.routeRef.requestSerializer else { return .proceed }
        switch s.transform(collected: body, clientContentType: ex.request.headers.first(.contentType), method: ex.request.method.name) {
        case .replace(let r): ex.replacementBody = r
        case .relay, .collect: ex.replacementBody = .init(body, contentType: "application/octet-stream", replacesClientType: false)
        case .refuse(let why): return Self.refusal(why.reason, why.message)
        }
        return .proceed
    }

    /// The head the upstream gets, written into `w`: the route's serializer rebuilds it (and
    /// describes the body it replaced) when the route has one; otherwise `ForwardingHeads`'
    /// canonical re-encoding. Both add `Via` and `X-Request-Id` and name the upstream in `Host`.
    func upstreamRequestHead(_ ex: Exchange, into w: inout HeadWriter) {
        // A resumed download asks for the rest (`Exchange+Resume`): the same request with `Range`.
        if let resumed = ex.resumption?.request {
            upstreamRequestHead(ex, resumed, into: &w)
        } else if let filled = ex.cache.fill?.upstreamRequest(ex.request) {   // the cache's validators (`Exchange+Cache`)
            upstreamRequestHead(ex, filled, into: &w)
        } else {
            upstreamRequestHead(ex, ex.request, into: &w)
        }
    }

    private func upstreamRequestHead(_ ex: Exchange, _ request: RequestHead, into w: inout HeadWriter) {
        let host = ex.routeRef.fixedHostField ?? ForwardingHeads.authority(ex.key)
        if let s = ex.routeRef.requestSerializer {
            ForwardingHeads.request(request, serializer: s, body: ex.replacementBody, host: host,
                                    framing: ex.requestOut, viaToken: context.viaToken, viaToken11: context.via11,
                                    idSerial: ex.id.serial, clientID: ex.id.client, idPrefix: context.idPrefix, into: &w)
        } else {
            ForwardingHeads.request(request, host: host, framing: ex.requestOut, viaToken: context.viaToken,
                                    viaToken11: context.via11, idSerial: ex.id.serial, clientID: ex.id.client,
                                    idPrefix: context.idPrefix, into: &w)
        }
    }

    /// 400 request-serialization-failed, carrying the serializer's reason.
    static func refusal(_ reason: String, _ message: String) -> RequestFilterVerdict {
        var e = GatewayError(.requestSerializationFailed, status: 400, message: message, source: .client)
        e.extra = [("reason", .string(reason))]
        return .refuse(e, reason: reason, message: message)
    }

    // MARK: the cache filters

    func requestCacheFilter(_ ex: Exchange) -> CacheKey? {
        guard ex.isRouted, ex.route.cache != nil else { return nil }
        return CacheKey.of(scheme: ex.intercepted ? .https : .http, request: ex.request)
    }

    func responseCacheFilter(_ ex: Exchange, _ head: ResponseHead, maxObject: Int) -> Bool {
        // The field rules only: freshness is judged once, at the store.
        if ResponseCache.fieldRefusal(request: ex.request, response: head) != nil { return false }
        if case .length(let n) = head.declaredFraming, n > UInt64(maxObject) { return false }
        return true
    }

    // MARK: upstream response filter

    /// The route's validator on the response head. A body validator's head verdict is final
    /// when the body cannot change it (the framing says whether there is a body, or the
    /// status alone fails); otherwise the body is buffered for it.
    func upstreamResponseFilter(_ ex: Exchange, _ head: ResponseHead, framing: BodyFraming) -> ResponseFilterVerdict {
        guard let validator = ex.route.validator, let config = ex.route.response else { return .relay }
        let bodyIsEmpty = ResponseValidation.bodyIsEmpty(framing)
        let facts = ResponseFacts(status: head.status, contentType: head.headers.first(.contentType),
                                  url: Self.upstreamURL(ex), bodyIsEmpty: bodyIsEmpty)
        if case .rejected(let error) = validator.validate(head: facts),
           !validator.needsBody || bodyIsEmpty != nil || error.reason == .unacceptableStatus {
            return ResponseFilterVerdict(head: .rejected, validation: ResponseValidation(config: config, validator: validator,
                                                                                        facts: facts, rejection: error))
        }
        guard validator.needsBody else { return .relay }
        if case .length(let n) = framing, n > UInt64(config.maxBodyBytes) {
            // Declared too large: not a byte is read, the reject is the body's size.
            return ResponseFilterVerdict(head: .needsBody(overLimit: true),
                                         validation: ResponseValidation(config: config, validator: validator, facts: facts,
                                                                        rejection: .bodyTooLarge(limit: config.maxBodyBytes)))
        }
        return ResponseFilterVerdict(head: .needsBody(overLimit: false),
                                     validation: ResponseValidation(config: config, validator: validator, facts: facts))
    }

    /// The route's body validator on the body read whole: its rejection, or the body it made
    /// (a transformed body), goes into `v`.
    func upstreamResponseBodyFilter(_ ex: Exchange, _ v: ResponseValidation) -> ResponseBodyVerdict {
        switch v.validator.validate(head: v.facts, body: v.body) {
        case .accepted(let transformed):
            v.transformed = transformed
            return .accepted
        case .rejected(let error):
            v.rejection = error
            return .rejected
        }
    }

    /// The URL the gateway fetched: `http://host:port/path?query`.
    static func upstreamURL(_ ex: Exchange) -> String {
        "\(ex.key.scheme)://\(ForwardingHeads.authority(ex.key))\(ForwardingHeads.upstreamTarget(ex.request.target))"
    }

    // MARK: logging

    /// Every record and counter of one request, in this order: the error record (when it
    /// failed), the reject record, metrics, the task's final event, the access record. Runs
    /// once per exchange (`ExchangeMachine.claimLogging`); a request that never became an
    /// exchange (`ex` nil) gets its error and access records.
    func logging(_ ex: Exchange, _ summary: RequestSummary, _ end: ExchangeEnd) {
        guard ex.machine.claimLogging() else { return }
        guard ex.isRouted else {
            logging(unparsed: summary, end)   // refused before a route: the request's own fields only
            return
        }
        let status: Int
        switch end {
        case .completed:
            status = ex.responseStatus
        case .answered(let e, _):
            status = e.status
            ex.responseStatus = e.status
            if e.code == .rejectedResponse { ex.outcome = .rejected }
            ex.failure = e.rejection?.reason ?? e.reason
            context.metrics.gatewayError(route: ex.route.name, error: e.reason)
        case .truncated(let e), .requestFailed(let e):
            status = ex.responseStatus
            ex.failure = e.reason
        case .aborted(let e):
            status = ex.responseHeadSent ? ex.responseStatus : e.status
            ex.outcome = .cancelled
            ex.failure = e.reason
        }
        if let e = end.error { logError(e, ex, summary) }
        ex.metrics.responseEnd = EventLoop.nowNanos()
        if let v = ex.validation { recordReject(ex, v) }
        if let r = ex.requestRejection { recordRequestReject(ex, r, status: status) }
        if let m = ex.routeRef.metrics { recordMetrics(ex, m, status: status) }
        if let hub = context.taskEvents, hub.wants(ex.outcome) {
            hub.publish(ex.event(ex.outcome, status: status, reason: ex.failure))
        }
        accessRecord(summary, route: ex.route.name, status: status, complete: end.complete, exchange: ex)
    }

    /// A request answered before it had a route (or a head that never parsed): its error
    /// record, the unrouted counters, and an access record with the request's own fields.
    func logging(unparsed summary: RequestSummary, _ end: ExchangeEnd) {
        if let e = end.error {
            logError(e, nil, summary)
            context.metrics.gatewayError(route: "-", error: e.reason)
            context.metrics.unrouted.count(e.status)
        }
        accessRecord(summary, route: nil, status: end.error?.status ?? 0, complete: end.complete, exchange: nil)
    }

    /// `request.error`: at error level when the upstream failed, warning otherwise. `route`
    /// and `target` name them for an error outside an exchange (a CONNECT tunnel refused).
    func logError(_ e: GatewayError, _ ex: Exchange?, _ summary: RequestSummary, route: String? = nil, target: String? = nil) {
        var md: Logger.Metadata = [
            "request_id": .string(summary.id.description),
            "status": .stringConvertible(e.status),
            "error": .string(e.reason),
            "source": .string(e.source.rawValue),
            "message": .string(e.message),
            "client": .string(summary.client.description),
        ]
        if let ex {
            md["route"] = .string(ex.route.name)
            md["method"] = .string(ex.request.method.name)
            md["target"] = .string(ex.targetDescription)
            md["upstream"] = .string(ex.lastUpstreamAddress?.description ?? ex.key.description)
        } else if let request = summary.request {
            md["method"] = .string(request.method.name)
            md["host"] = .string(request.host)
            if let route { md["route"] = .string(route) }
            if let target { md["target"] = .string(target) }
        }
        context.logger.log(level: e.source == .upstream ? .error : .warning, "request.error", metadata: md)
    }

    /// The reject record: one `response.rejected` log line and an entry in the gateway's ring.
    private func recordReject(_ ex: Exchange, _ v: ResponseValidation) {
        guard let error = v.rejection, !v.recorded else { return }
        v.recorded = true
        let record = RejectRecord(
            unixMillis: RejectRecord.nowUnixMillis(), requestID: ex.id.description, route: ex.route.name,
            method: ex.request.method.name, url: v.facts.url,
            upstream: ex.lastUpstreamAddress?.description ?? ex.key.description, status: v.facts.status,
            contentType: v.facts.contentType, reason: error.reason.rawValue, code: error.code, message: error.message,
            underlying: error.underlying?.message, durationMillis: ex.durationMillis, mode: v.config.mode.rawValue,
            bodySample: String(decoding: v.sample, as: UTF8.self))
        context.logger.warning("response.rejected", metadata: record.metadata)
        context.rejects.append(record)
        context.metrics.rejected(route: ex.route.name, reason: error.reason.rawValue)
    }

    /// The request phase's reject record: one `request.rejected` log line and an entry in the
    /// gateway's ring (`GET /rejects?side=request`), like a response's.
    private func recordRequestReject(_ ex: Exchange, _ r: RequestRejection, status: Int) {
        let record = RejectRecord(
            unixMillis: RejectRecord.nowUnixMillis(), requestID: ex.id.description, route: ex.route.name,
            method: ex.request.method.name, url: ex.targetDescription, upstream: ex.key.description, status: status,
            contentType: ex.request.headers.first(.contentType), reason: r.reason, code: 0, message: r.message,
            underlying: nil, durationMillis: ex.durationMillis, mode: "enforce",
            bodySample: String(decoding: r.bodySample, as: UTF8.self), side: .request)
        context.logger.warning("request.rejected", metadata: record.metadata)
        context.rejects.append(record)
        context.metrics.rejected(route: ex.route.name, reason: r.reason)
    }

    /// The exchange's counters and latencies: status class, bytes, time to first byte and
    /// total. (The in-flight gauge and the upstream slot are released where the exchange
    /// ends, `Exchange.end`, not here.)
    private func recordMetrics(_ ex: Exchange, _ m: RouteMetrics, status: Int) {
        m.requestFinished(status: status, bytesIn: ex.bytesIn, bytesOut: ex.bytesOut)
        m.latency.observe(firstByte: ex.responseStartedAt > ex.started ? ex.responseStartedAt - ex.started : 0,
                          total: ex.metrics.responseEnd &- ex.started)
    }

    /// `request.access`, straight into the worker's buffer when its logger is the plain JSON
    /// handler (the per-request path), else through swift-log.
    private func accessRecord(_ summary: RequestSummary, route: String?, status: Int, complete: Bool, exchange ex: Exchange?) {
        guard context.logsAccess else { return }
        let duration = ex?.durationMillis ?? 0
        var record = AccessRecord(
            requestID: summary.id, status: status, bytesIn: ex?.bytesIn ?? 0, bytesOut: ex?.bytesOut ?? 0,
            durationMillis: (duration * 1000).rounded() / 1000, client: summary.client,
            request: summary.request.map { ($0.method.name, ex?.targetDescription ?? Self.refusedTarget($0), $0.host) },
            route: route, upstream: ex?.lastUpstreamAddress, incomplete: !complete,
            upstreamTiming: ex.flatMap { ex in
                ex.responseStartedAt > 0
                    ? (Double((ex.responseStartedAt - ex.started) / 1000) / 1000, ex.metrics.reused) : nil
            },
            task: ex.map { ($0.taskState.rawValue, $0.metrics) })
        record.intercepted = summary.intercepted
        record.resumed = ex?.resumption?.resumed ?? 0
        writeAccess(record)
    }

    /// The target of a request refused before it became an exchange: a CONNECT's authority
    /// (`host:port`), "-" for any other.
    private static func refusedTarget(_ req: RequestHead) -> String {
        if case .authority(let host, let port) = req.target { return "\(host):\(port)" }
        return "-"
    }

    /// The one place an access record is written: encoded straight into the worker's log
    /// buffer when it writes JSON lines, through the logger otherwise. Every caller has
    /// checked `context.logsAccess`.
    @inline(__always)
    func writeAccess(_ record: AccessRecord) {
        if let buffer = context.accessLog {
            buffer.append { record.encode(into: &$0) }
        } else {
            context.logger.info(AccessRecord.event, metadata: record.metadata)
        }
    }
}
