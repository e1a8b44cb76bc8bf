import AirlockConfig
import AirlockSerialization
import AirlockIO
import AirlockSession
import AirlockWire

/// Answers given before a request became an exchange, and what the connection does once an
/// exchange has ended (`Exchange.end`): the next request, or the close.
extension ClientConnection {
    /// A head that never became a request (unparsable, truncated, not complete within
    /// `header_timeout`): `e`'s status and JSON body, logged, and the connection closed unless
    /// the machine's keep-alive rule says otherwise (it never does without a request). Every
    /// parsed request has its `Exchange` and is answered through it (`Exchange.respond`).
    func respondError(_ e: GatewayError, requestID: RequestID) {
        let keepAlive = ExchangeMachine.clientKeepAlive(requestKeepAlive: false, requestWhole: false,
                                                        clientContinues: clientContinues, mustClose: e.mustClose)
        writeAnswer(e, keepAlive: keepAlive, requestID: requestID)
        worker.phases.logging(unparsed: RequestSummary(id: requestID, request: nil, client: peer, intercepted: isIntercepted),
                              .answered(e, keepAlive: keepAlive))
        continueAfter(keepAlive: keepAlive)
    }

    /// Airlock's own answer: `e`'s status and JSON body.
    func writeAnswer(_ e: GatewayError, keepAlive: Bool, requestID: RequestID) {
        let idText = requestID.description
        stream.write(ForwardingHeads.error(status: e.status, body: e.jsonBody(requestID: idText), keepAlive: keepAlive,
                                           requestID: idText, retryAfter: e.retryAfter, error: e.reason))
    }

    /// The exchange is over (before its logging phase runs): the connection no longer runs it.
    func exchangeDetached(_ ex: Exchange) {
        if exchange === ex { exchange = nil }
    }

    /// The exchange ended and was logged: pipelined requests already buffered are served now
    /// (while draining, a connection with none waiting closes there), or the connection closes.
    func exchangeEnded(_ ex: Exchange, _ end: ExchangeEnd) {
        switch end {
        case .completed:
            worker.recycle(ex.request.headers)
            if let r = ex.response { worker.recycle(r.headers) }
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

    private func continueAfter(keepAlive: Bool) {
        if keepAlive {
            awaitNextHead()
        } else {
            closeAfterFlush()
        }
    }
}
