import AirlockIO
import AirlockWire
import Logging

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
        stream.write(ForwardingHeads.error(status: e.status, body: e.jsonBody(requestID: requestID.description), keepAlive: keepAlive,
                                           retryAfter: e.retryAfter))
        logError(e, ex, requestID: requestID, request: req)
        worker.context.metrics.gatewayError(route: ex?.route.name ?? "-", error: e.reason)
        if let ex {
            ex.responseStatus = e.status
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
        if let v = ex.validation { recordReject(ex, v) }
        if let m = ex.routeRef.metrics { recordMetrics(ex, m, status: status) }
        if worker.connectionShare > 0 { worker.exchangeEnded(ex) }
        guard worker.logsAccess else { return }
        logAccess(requestID: ex.id, request: ex.request, route: ex.route.name, status: status,
                  upstream: ex.lastUpstreamAddress?.description, bytesIn: ex.bytesIn, bytesOut: ex.bytesOut,
                  duration: ex.durationMillis, complete: complete, exchange: ex)
    }

    /// The exchange's counters and latencies (once, when it is logged): status class, bytes,
    /// time to first byte and total; the in-flight gauge goes down.
    private func recordMetrics(_ ex: Exchange, _ m: RouteMetrics, status: Int) {
        worker.context.metrics.inFlight.decrement()
        m.requestFinished(status: status, bytesIn: ex.bytesIn, bytesOut: ex.bytesOut)
        let now = EventLoop.nowNanos()
        m.latency.observe(firstByte: ex.responseStartedAt > ex.started ? ex.responseStartedAt - ex.started : 0,
                          total: now - ex.started)
    }

    func logAccess(requestID: RequestID, request: RequestHead?, route: String?, status: Int, upstream: String?,
                   bytesIn: UInt64, bytesOut: UInt64, duration: Double, complete: Bool, exchange ex: Exchange? = nil) {
        guard worker.logsAccess else { return }
        var md: Logger.Metadata = [
            "request_id": .stringConvertible(requestID),
            "status": .stringConvertible(status),
            "bytes_in": .stringConvertible(bytesIn),
            "bytes_out": .stringConvertible(bytesOut),
            "duration_ms": .stringConvertible((duration * 1000).rounded() / 1000),
            "client": .string(peer.description),
        ]
        if let request {
            md["method"] = .string(request.method.name)
            md["target"] = .string(ex?.targetDescription ?? "-")
            md["host"] = .string(request.host)
        }
        if let route { md["route"] = .string(route) }
        if let upstream { md["upstream"] = .string(upstream) }
        if !complete { md["incomplete"] = .stringConvertible(true) }
        if let ex, ex.responseStartedAt > 0 {
            md["upstream_ms"] = .stringConvertible(Double((ex.responseStartedAt - ex.started) / 1000) / 1000)
            md["upstream_reused"] = .stringConvertible(ex.connectedAt == 0)
        }
        logger.info("request.access", metadata: md)
    }
}
