import AirlockConfig
import AirlockSerialization
import AirlockIO
import AirlockWire
import AirlockSession

/// How a request ends: Airlock's own answers, and the one path every exchange leaves by
/// (`endExchange`), which runs the logging phase exactly once and then decides what becomes
/// of the client connection.
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
                                           requestID: idText, retryAfter: e.retryAfter, error: e.reason))
        if let ex {
            endExchange(ex, .answered(e, keepAlive: keepAlive))
        } else {
            // Refused before it became an exchange (unparsable, filtered, unrouted, timed out).
            worker.phases.logging(nil, RequestSummary(id: requestID, request: req, client: peer, intercepted: interception != nil), .answered(e, keepAlive: keepAlive))
            continueAfter(keepAlive: keepAlive)
        }
    }

    /// The exchange failed before any response byte reached the client.
    func failExchange(_ e: GatewayError) {
        guard let ex = exchange else { return }
        if let u = ex.upstream { ex.upstream = nil; u.close() }
        respondError(e, exchange: ex, requestID: ex.id)
    }

    /// The one way out of an exchange: the upstream connection is released (back to the pool
    /// if the machine's `ReuseDecision` says so) or closed, the logging phase runs (once), and
    /// the client connection goes on to its next request, or closes.
    func endExchange(_ ex: Exchange, _ end: ExchangeEnd) {
        ex.deadline?.cancel()
        switch end {
        case .completed(let reusable):
            releaseUpstream(ex, bodyReadToEnd: reusable)
        case .answered, .truncated, .aborted, .requestFailed:
            if let u = ex.upstream { ex.upstream = nil; u.close() }   // never reused
        }
        if exchange === ex { exchange = nil }
        worker.phases.logging(ex, RequestSummary(id: ex.id, request: ex.request, client: peer, intercepted: interception != nil), end)
        switch end {
        case .completed:
            worker.recycle(ex.request.headers)
            if let r = ex.response { worker.recycle(r.headers) }
            // Pipelined requests already buffered are served now; while draining, a
            // connection with none waiting closes there.
            continueAfter(keepAlive: ex.clientKeepAlive)
        case .answered(_, let keepAlive):
            continueAfter(keepAlive: keepAlive)
        case .truncated:
            closeAfterFlush()   // what arrived goes out, then the cut tells the client
        case .requestFailed:
            closeAfterFlush()   // the rest of what it sends is not read
        case .aborted:
            close()
        }
    }

    /// The response's last byte is relayed (`upstreamReusable`: its body was read to the end).
    /// The exchange ends, unless the machine says the client's body is still coming: then the
    /// upstream connection goes now (closed: the request is incomplete) and the rest of the
    /// body is read and judged (`judgeRestOfRequestBody`) before the exchange is logged.
    func responseDelivered(_ ex: Exchange, upstreamReusable: Bool) {
        guard case .judgeRestOfRequestBody = ex.machine.responseComplete() else {
            endExchange(ex, .completed(upstreamReusable: upstreamReusable))
            return
        }
        releaseUpstream(ex, bodyReadToEnd: upstreamReusable)
        let was = ex.machine.isSuspended
        performFlow(ex.machine.upstreamOutputDrained(), ex, wasSuspended: was)   // nothing goes up any more
        timerMode = .restOfBody
        timer.schedule(after: limits.headerTimeout)
        judgeRestOfRequestBody(ex)
    }

    private func continueAfter(keepAlive: Bool) {
        if keepAlive {
            awaitNextHead()
        } else {
            closeAfterFlush()
        }
    }
}
