import AirlockConfig
import CoreMetrics
import AirlockIO
import AirlockSession
import AirlockWire

/// How an exchange ends: Airlock's own answer, or the one path every exchange leaves by
/// (`end`), which releases what it held, runs the logging phase exactly once and hands the
/// client connection back (`ClientConnection.exchangeEnded`).
extension Exchange {
    /// Answers with `e`'s status and JSON body. The connection is kept only when the request
    /// was fully read and the error does not make it untrustworthy (the machine's keep-alive rule).
    func respond(_ e: GatewayError) {
        run(machine.answeredByGateway(requestKeepAlive: request.keepAlive, clientContinues: client.clientContinues,
                                      mustClose: e.mustClose)) { e }
    }

    /// The exchange failed before any response byte reached the client.
    func failExchange(_ e: GatewayError) {
        guard isCurrent else { return }
        dropUpstream()
        respond(e)
    }

    /// The response's last byte is relayed: the machine says whether the exchange ends, or the
    /// client's body is still coming and its rest is judged first (`judgeRestOfRequestBody`).
    func responseDelivered() {
        if cache.active { cacheResponseEnded() }   // the store decision
        run(machine.responseComplete())
    }

    /// The one way out of an exchange: the upstream connection is released (back to the pool
    /// if the machine's `ReuseDecision` says so) or closed, what the exchange held is returned,
    /// the logging phase runs (once), and the client connection goes on to its next request,
    /// or closes.
    func end(_ end: ExchangeEnd) {
        deadline?.cancel()
        switch end {
        case .completed(let reusable):
            releaseUpstream(bodyReadToEnd: reusable)
        case .answered, .truncated, .aborted, .requestFailed:
            dropUpstream()   // never reused
        }
        client.exchangeDetached(self)
        releaseAdmission()
        if cache.active { cacheExchangeEnded(end) }
        worker.phases.logging(self, RequestSummary(id: id, request: request, client: client.peer,
                                                   intercepted: intercepted), end)
        client.exchangeEnded(self, end)
    }

    /// What the exchange held while it ran: its place in the in-flight gauge, and its
    /// upstream slot or queue ticket (`max_connections_per_upstream`). Released once, where
    /// the exchange ends; the logging phase only logs.
    private func releaseAdmission() {
        guard inFlight else { return }
        inFlight = false
        worker.context.metrics.inFlight.decrement()
        if worker.connectionShare > 0 { worker.exchangeEnded(self) }
    }
}
