import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// The one place the exchange machine's decisions are carried out (async-http-client's
/// `run(action)`): every `ExchangeMachine.Action` is matched by name, none is dropped, and
/// nothing here decides. `answer` builds the error of the event that produced the action (its
/// message names what the executor saw); it is called only by the actions that answer, cut or
/// abort the client.
extension ClientConnection {
    func run(_ action: ExchangeMachine.Action, _ ex: Exchange, answer: () -> GatewayError) {
        switch action {
        case .none, .absorbInterim, .waitForUpload:
            break   // an interim head is dropped by the head loop; the upload's wait goes on
        case .sendRequestHead:
            sendRequestHead(ex)
        case .connectNextAddress:
            dropUpstream(ex)
            connectNextAddress(ex)
        case .retryOnNewConnection:
            dropUpstream(ex)
            connectUpstream(ex)
        case .respondError:
            failExchange(answer())
        case .answer(let keepAlive):
            let e = answer()
            writeAnswer(e, keepAlive: keepAlive, requestID: ex.id)
            endExchange(ex, .answered(e, keepAlive: keepAlive))
        case .respondClientError:
            dropUpstream(ex)   // it never gets the rest of the body
            respondError(answer(), exchange: ex, requestID: ex.id)
        case .failRequest:
            endExchange(ex, .requestFailed(answer()))
        case .truncateClient:
            endExchange(ex, .truncated(answer()))   // what arrived goes out, then the cut tells the client
        case .abort:
            endExchange(ex, .aborted(answer()))
        case .writeResponseHead:
            writeResponseHead(ex)
            pumpResponseBody()
        case .validateResponse:
            let verdict = worker.phases.upstreamResponseFilter(ex, ex.response!, framing: ex.responseFraming)
            ex.validation = verdict.validation
            run(ex.machine.responseHeadJudged(verdict.head, verdict.enforcement), ex, answer: answer)
        case .bufferResponseBody, .drainRejectedBody:
            pumpValidatedBody(ex)
        case .runBodyValidator:
            runBodyValidator(ex)
        case .deliverValidatedBody:
            deliverValidatedBody(ex)
        case .relayBodyOverLimit:
            relayBodyOverLimit(ex)
        case .answerReject(let reusable):
            answerReject(ex, upstreamReusable: reusable)
        case .keepServingHalfClosedClient:
            lifecycle.inputClosed()
        case .relayBufferedBody:
            lifecycle.inputClosed()
            if ex.collected != nil {
                collectRequestBody(ex)   // completes it, or finds it cut off
            } else {
                pumpRequestBody()   // decides now, or once the upstream is ready
            }
        case .pauseClientReads:
            stream.setReading(false)   // resumed when the upstream's output drains (upstreamWritable)
            if ex.machine.upstreamReads == .flowing { post(.suspended, ex) }
        case .resumeClientReads:
            stream.setReading(true)
            if !ex.machine.isSuspended { post(.resumed, ex) }
        case .pauseUpstreamReads:
            ex.upstream?.setReading(false)   // resumed when the client's output drains (streamWritable)
            stream.setWriteLowWatermark(Self.writeHighWatermark / 2)
            if ex.machine.clientReads == .flowing { post(.suspended, ex) }
        case .resumeUpstreamReads:
            ex.upstream?.setReading(true)
            if !ex.machine.isSuspended { post(.resumed, ex) }
        case .judgeRestOfRequestBody:
            // The upstream goes now (closed: the request is incomplete); nothing goes up any more.
            releaseUpstream(ex, bodyReadToEnd: true)
            run(ex.machine.upstreamOutputDrained(), ex, answer: answer)
            timerMode = .restOfBody
            timer.schedule(after: limits.headerTimeout)
            judgeRestOfRequestBody(ex)
        case .finishExchange:
            endExchange(ex, .completed(upstreamReusable: true))
        }
    }

    /// `run` for the events that neither answer nor cut the client (flow, progress, the
    /// response's end): a client abort is the only end they can lead to.
    func run(_ action: ExchangeMachine.Action, _ ex: Exchange) {
        run(action, ex) { Self.clientAbort(.eof) }
    }

    /// The upstream connection leaves the exchange, closed (never reused).
    func dropUpstream(_ ex: Exchange) {
        if let u = ex.upstream { ex.upstream = nil; u.close() }
    }

    static func clientAbort(_ event: StreamEvent) -> GatewayError {
        let why: String
        switch event {
        case .eof: why = "client closed the connection"
        case .writeTimeout: why = "client stopped reading"
        default: why = "client connection failed"
        }
        return GatewayError(.clientAborted, status: 499, message: why, source: .client)
    }
}
