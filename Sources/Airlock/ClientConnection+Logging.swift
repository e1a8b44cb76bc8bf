import CoreMetrics
import AirlockIO
import AirlockWire
import Logging
import AirlockSession

/// The error and logging phases: the single place where responses are refused and where
/// access and error records are written.
extension ClientConnection {
    /// Answers with `e`'s status and JSON body. Keeps the connection only when the request
    /// was fully read and the error does not make the connection untrustworthy.
    func respondError(_ e: GatewayError, exchange ex: Exchange?, requestID: RequestID, request: RequestHead? = nil) {
        let req = ex?.request ?? request
        ex?.machine.answeredByGateway()
        let bodyDone = ex?.requestBodyDone ?? (req?.framing == BodyFraming.none)
        let keepAlive = !e.mustClose && bodyDone && (req?.keepAlive ?? false) && clientContinues
        let idText = requestID.description
        stream.write(ForwardingHeads.error(status: e.status, body: e.jsonBody(requestID: idText), keepAlive: keepAlive,
                                           requestID: idText, retryAfter: e.retryAfter))
        logError(e, ex, requestID: requestID, request: req)
        worker.context.metrics.gatewayError(route: ex?.route.name ?? "-", error: e.reason)
        if let ex {
            ex.responseStatus = e.status
            if e.code == .rejectedResponse { ex.outcome = .rejected }
            ex.failure = e.rejection?.reason ?? e.reason
            logAccess(ex, status: e.status, complete: true)
        } else {
            worker.context.metrics.unrouted.count(e.status)
            logAccess(requestID: requestID, request: req, route: nil, status: e.status, upstream: nil,
                      bytesIn: 0, bytesOut: 0, duration: 0, complete: true)
        }
        exchange = nil
        if keepAlive {
            awaitNextHead()
        } else {
            closeAfterFlush()
        }
    }

    /// The exchange failed before any response byte reached the client.
    func failExchange(_ e: GatewayError) {
        guard let ex = exchange else { return }
        if let u = ex.upstream { ex.upstream = nil; u.close() }
        respondError(e, exchange: ex, requestID: ex.id)
    }

    func logError(_ e: GatewayError, _ ex: Exchange?, requestID: RequestID? = nil, request: RequestHead? = nil) {
        var md: Logger.Metadata = [
            "request_id": .string((requestID ?? ex?.id)?.description ?? "-"),
            "status": .stringConvertible(e.status),
            "error": .string(e.reason),
            "source": .string(e.source.rawValue),
            "message": .string(e.message),
            "client": .string(peer.description),
        ]
        if let ex {
            md["route"] = .string(ex.route.name)
            md["method"] = .string(ex.request.method.name)
            md["target"] = .string(ex.targetDescription)
            md["upstream"] = .string(ex.lastUpstreamAddress?.description ?? ex.key.description)
        } else if let request {
            md["method"] = .string(request.method.name)
            md["host"] = .string(request.host)
        }
        let level: Logger.Level = e.source == .upstream ? .error : .warning
        logger.log(level: level, "request.error", metadata: md)
    }

    func logAccess(_ ex: Exchange, status: Int, complete: Bool) {
        postEnd(ex, status: status)
        if let v = ex.validation { recordReject(ex, v) }
        if let m = ex.routeRef.metrics { recordMetrics(ex, m, status: status) }
        if worker.connectionShare > 0 { worker.exchangeEnded(ex) }
        guard worker.logsAccess else { return }
        logAccess(requestID: ex.id, request: ex.request, route: ex.route.name, status: status,
                  upstream: ex.lastUpstreamAddress, bytesIn: ex.bytesIn, bytesOut: ex.bytesOut,
                  duration: ex.durationMillis, complete: complete, exchange: ex)
    }

    /// The exchange's counters and latencies (once, when it is logged): status class, bytes,
    /// time to first byte and total; the in-flight gauge goes down.
    private func recordMetrics(_ ex: Exchange, _ m: RouteMetrics, status: Int) {
        worker.context.metrics.inFlight.decrement()
        m.requestFinished(status: status, bytesIn: ex.bytesIn, bytesOut: ex.bytesOut)
        let end = ex.metrics.responseEnd != 0 ? ex.metrics.responseEnd : EventLoop.nowNanos()
        m.latency.observe(firstByte: ex.responseStartedAt > ex.started ? ex.responseStartedAt - ex.started : 0,
                          total: end &- ex.started)
    }

    func logAccess(requestID: RequestID, request: RequestHead?, route: String?, status: Int, upstream: SocketAddress?,
                   bytesIn: UInt64, bytesOut: UInt64, duration: Double, complete: Bool, exchange ex: Exchange? = nil) {
        guard worker.logsAccess else { return }
        let record = AccessRecord(
            requestID: requestID, status: status, bytesIn: bytesIn, bytesOut: bytesOut,
            durationMillis: (duration * 1000).rounded() / 1000, client: peer,
            request: request.map { ($0.method.name, ex?.targetDescription ?? "-", $0.host) },
            route: route, upstream: upstream, incomplete: !complete,
            upstreamTiming: ex.flatMap { ex in
                ex.responseStartedAt > 0
                    ? (Double((ex.responseStartedAt - ex.started) / 1000) / 1000, ex.connectedAt == 0) : nil
            },
            task: ex.map { ($0.taskState.rawValue, $0.metrics) })
        if let buffer = worker.accessLog {
            buffer.append { record.encode(into: &$0) }
        } else {
            logger.info(AccessRecord.event, metadata: record.metadata)
        }
    }
}
