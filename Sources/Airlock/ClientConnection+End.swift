import AirlockConfig
import CoreMetrics
import AirlockSerialization
import AirlockIO
import AirlockWire
import AirlockSession

/// How a request ends: Airlock's own answers, and the one path every exchange leaves by
/// (`endExchange`), which runs the logging phase exactly once and then decides what becomes
/// of the client connection.
extension ClientConnection {
    /// Answers with `e`'s status and JSON body. The connection is kept only when the request
    /// was fully read and the error does not make it untrustworthy (the machine's keep-alive rule).
    func respondError(_ e: GatewayError, exchange ex: Exchange?, requestID: RequestID, request: RequestHead? = nil) {
        if let ex {
            run(ex.machine.answeredByGateway(requestKeepAlive: ex.request.keepAlive, clientContinues: clientContinues,
                                             mustClose: e.mustClose), ex) { e }
            return
        }
        // Refused before it became an exchange (unparsable, filtered, unrouted, timed out).
        let keepAlive = ExchangeMachine.clientKeepAlive(requestKeepAlive: request?.keepAlive ?? false,
                                                        requestWhole: request?.framing == BodyFraming.none,
                                                        clientContinues: clientContinues, mustClose: e.mustClose)
        writeAnswer(e, keepAlive: keepAlive, requestID: requestID)
        worker.phases.logging(nil, RequestSummary(id: requestID, request: request, client: peer, intercepted: interception != nil),
                              .answered(e, keepAlive: keepAlive))
        continueAfter(keepAlive: keepAlive)
    }

    /// Airlock's own answer: `e`'s status and JSON body.
    func writeAnswer(_ e: GatewayError, keepAlive: Bool, requestID: RequestID) {
        let idText = requestID.description
        stream.write(ForwardingHeads.error(status: e.status, body: e.jsonBody(requestID: idText), keepAlive: keepAlive,
                                           requestID: idText, retryAfter: e.retryAfter, error: e.reason))
    }

    /// The exchange failed before any response byte reached the client.
    func failExchange(_ e: GatewayError) {
        guard let ex = exchange else { return }
        dropUpstream(ex)
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
        releaseAdmission(ex)
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

    /// The response's last byte is relayed: the machine says whether the exchange ends, or the
    /// client's body is still coming and its rest is judged first (`judgeRestOfRequestBody`).
    func responseDelivered(_ ex: Exchange) {
        run(ex.machine.responseComplete(), ex)
    }

    /// What the exchange held while it ran: its place in the in-flight gauge, and its
    /// upstream slot or queue ticket (`max_connections_per_upstream`). Released once, where
    /// the exchange ends; the logging phase only logs.
    private func releaseAdmission(_ ex: Exchange) {
        guard ex.inFlight else { return }
        ex.inFlight = false
        worker.context.metrics.inFlight.decrement()
        if worker.connectionShare > 0 { worker.exchangeEnded(ex) }
    }

    private func continueAfter(keepAlive: Bool) {
        if keepAlive {
            awaitNextHead()
        } else {
            closeAfterFlush()
        }
    }
}
