import AirlockIO
import AirlockSerialization
import AirlockWire
import AirlockSession
import Logging

/// The validate phase: between the parsed response head and the relay to the client. Runs only
/// on routes with a `response:` block (`RouteConfig.validator`). Where it stands and what follows
/// from each verdict is `ExchangeMachine`'s (`validation`, `responseHeadJudged`, `responseBodyJudged`).
extension Exchange {
    // MARK: reading the body

    /// Reads decoded payload from the upstream into the validation state (the machine's
    /// `.buffering` or `.drainingRejected`) and reports when the body ended or passed the limit.
    func pumpValidatedBody() {
        guard let u = upstream, let v = validation else { return }
        let buffering = machine.validation == .buffering
        do throws(WireError) {
            let stop = try BodyPump.pump(u.stream, &responseDecoder) { n in
                let keep = buffering ? n : min(n, v.sampleRoom)
                if keep > 0 { u.stream.withInput(max: keep) { v.body.append(contentsOf: $0) } }
                u.stream.drainInput(n)
                v.payloadBytes += n
                return v.payloadBytes <= v.config.maxBodyBytes   // over the limit: stop reading
            }
            if stop == .needMore { return }
        } catch {
            dropUpstream()   // never reused
            run(machine.upstreamFailed(.malformed)) { GatewayError(upstreamWire: error) }
            return
        }
        if v.payloadBytes > v.config.maxBodyBytes {
            bodyOverLimit(v)
        } else {
            run(machine.responseBodyEnded())
        }
    }

    private func bodyOverLimit(_ v: ResponseValidation) {
        if v.rejection == nil { v.rejection = .bodyTooLarge(limit: v.config.maxBodyBytes) }
        run(machine.responseBodyOverLimit())
    }

    // MARK: deciding

    /// The buffered body is whole (`runBodyValidator`): the response body filter's verdict goes
    /// to the machine.
    func runBodyValidator() {
        guard let v = validation else { return }
        run(machine.responseBodyJudged(accepted: worker.phases.upstreamResponseBodyFilter(self, v).accepted))
    }

    /// Report-only, over `max_body_bytes`: what was read goes to the client, the rest streams.
    func relayBodyOverLimit() {
        guard let v = validation else { return }
        writeResponseHead()
        let read = v.body
        v.body = Array(v.body.prefix(ResponseValidation.sampleBytes))
        if responseOut == .chunked { clientStream.write(ChunkedEncoder.chunkHeader(size: read.count)) }
        clientStream.write(read)
        if responseOut == .chunked { clientStream.write(ChunkedEncoder.chunkTrailer) }
        bytesOut += UInt64(read.count)
        pumpResponseBody()
    }

    /// Enforce: `reject_status` and the JSON reject body; the upstream is kept only when its body
    /// was read whole and it is keep-alive (`upstreamReusable`).
    func answerReject(upstreamReusable: Bool) {
        guard let v = validation, let error = v.rejection else { return }
        releaseUpstream(bodyReadToEnd: upstreamReusable)
        respond(GatewayError(rejected: error, status: v.config.rejectStatus, facts: v.facts))
    }

    // MARK: delivering

    /// The head with `Content-Length` framing for the buffered body (as the validator made it,
    /// or untouched in report-only mode), then the body, at the client's pace.
    func deliverValidatedBody() {
        releaseUpstream(bodyReadToEnd: true)
        guard let v = validation, let head = response else { return }
        let body = v.rejection == nil ? (v.transformed ?? v.body) : v.body
        let framing: BodyFraming = head.framing(requestMethod: request.method) == .none ? .none : .length(UInt64(body.count))
        responseOut = framing == .none ? .none : .length
        clientKeepAlive = machine.clientKeepAlive(requestKeepAlive: request.keepAlive, clientContinues: client.clientContinues)
        writeResponseHead(framing: framing)
        if cache.fill != nil {   // what the client gets is what may be stored
            cache.body = body
            cache.teeing = body.count <= cache.maxObject
        }
        if v.rejection == nil {
            v.body = []
        } else {
            v.body = Array(v.body.prefix(ResponseValidation.sampleBytes))
        }
        v.out = framing == .none ? [] : body
        v.outOffset = 0
        continueDelivery()
    }

    /// Writes the next slices of the validated body; pauses above the client's high watermark
    /// (resumed by `streamWritable`).
    func continueDelivery() {
        guard let v = validation else { return }
        while v.outOffset < v.out.count {
            let n = min(v.out.count - v.outOffset, ClientConnection.writeHighWatermark)
            let start = v.outOffset
            v.out.withUnsafeBytes { clientStream.write(UnsafeRawBufferPointer(rebasing: $0[start..<(start + n)])) }
            v.outOffset += n
            bytesOut += UInt64(n)
            if clientStream.outputLength >= ClientConnection.writeHighWatermark {
                clientStream.setWriteLowWatermark(ClientConnection.writeHighWatermark / 2)
                return
            }
        }
        v.out = []
        responseDelivered()   // the upstream was released in `deliverValidatedBody`
    }
}
