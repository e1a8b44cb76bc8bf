import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// The one place the exchange machine's decisions are carried out (async-http-client's
/// `run(action)`): every `ExchangeMachine.Action` is matched by name, none is dropped, and
/// nothing here decides. `answer` builds the error of the event that produced the action (its
/// message names what the executor saw); it is called only by the actions that answer, cut or
/// abort the client.
extension Exchange {
    func run(_ action: ExchangeMachine.Action, answer: () -> GatewayError) {
        switch action {
        case .none, .absorbInterim, .waitForUpload:
            break   // an interim head is dropped by the head loop; the upload's wait goes on
        case .sendRequestHead:
            sendRequestHead()
        case .connectNextAddress:
            dropUpstream()
            connectNextAddress()
        case .retryOnNewConnection:
            dropUpstream()
            connectUpstream()
        case .respondError:
            failExchange(answer())
        case .answer(let keepAlive):
            let e = answer()
            client.writeAnswer(e, keepAlive: keepAlive, requestID: id)
            end(.answered(e, keepAlive: keepAlive))
        case .respondClientError:
            dropUpstream()   // it never gets the rest of the body
            respond(answer())
        case .failRequest:
            end(.requestFailed(answer()))
        case .truncateClient:
            end(.truncated(answer()))   // what arrived goes out, then the cut tells the client
        case .abort:
            end(.aborted(answer()))
        case .writeResponseHead:
            writeResponseHead()
            pumpResponseBody()
        case .validateResponse:
            let verdict = worker.phases.upstreamResponseFilter(self, response!, framing: responseFraming)
            validation = verdict.validation
            run(machine.responseHeadJudged(verdict.head, verdict.enforcement), answer: answer)
        case .bufferResponseBody, .drainRejectedBody:
            pumpValidatedBody()
        case .runBodyValidator:
            runBodyValidator()
        case .deliverValidatedBody:
            deliverValidatedBody()
        case .relayBodyOverLimit:
            relayBodyOverLimit()
        case .answerReject(let reusable):
            answerReject(upstreamReusable: reusable)
        case .keepServingHalfClosedClient:
            client.lifecycle.inputClosed()
        case .relayBufferedBody:
            client.lifecycle.inputClosed()
            if collected != nil {
                collectRequestBody()   // completes it, or finds it cut off
            } else {
                pumpRequestBody()   // decides now, or once the upstream is ready
            }
        case .pauseClientReads:
            clientStream.setReading(false)   // resumed when the upstream's output drains (upstreamWritable)
            if machine.upstreamReads == .flowing { post(.suspended) }
        case .resumeClientReads:
            clientStream.setReading(true)
            if !machine.isSuspended { post(.resumed) }
        case .pauseUpstreamReads:
            upstream?.setReading(false)   // resumed when the client's output drains (streamWritable)
            clientStream.setWriteLowWatermark(ClientConnection.writeHighWatermark / 2)
            if machine.clientReads == .flowing { post(.suspended) }
        case .resumeUpstreamReads:
            upstream?.setReading(true)
            if !machine.isSuspended { post(.resumed) }
        case .judgeRestOfRequestBody:
            // The upstream goes now (closed: the request is incomplete); nothing goes up any more.
            releaseUpstream(bodyReadToEnd: true)
            run(machine.upstreamOutputDrained(), answer: answer)
            client.timerMode = .restOfBody
            client.timer.schedule(after: limits.headerTimeout)
            judgeRestOfRequestBody()
        case .finishExchange:
            end(.completed(upstreamReusable: true))
        case .resumeDownload:
            responseScanner.reset()
            connectUpstream()   // a pooled connection or a new one; `sendRequestHead` sends the range request
        case .continueResumedBody:
            pumpResponseBody()
        case .deliverCachedResponse:
            deliverCached()
        }
    }

    /// `run` for the events that neither answer nor cut the client (flow, progress, the
    /// response's end): a client abort is the only end they can lead to.
    func run(_ action: ExchangeMachine.Action) {
        run(action) { .clientAborted(.eof) }
    }

    /// The upstream connection leaves the exchange, closed (never reused).
    func dropUpstream() {
        if let u = upstream { upstream = nil; u.close() }
    }
}
