import AirlockIO
import AirlockSerialization
import AirlockWire
import AirlockSession
import Logging

/// The validate phase: between the parsed response head and the relay to the client. Runs only
/// on routes with a `response:` block (`RouteConfig.validator`). Where it stands and what follows
/// from each verdict is `ExchangeMachine`'s (`validation`, `responseHeadJudged`, `responseBodyJudged`).
extension ClientConnection {
    // MARK: reading the body

    /// Reads decoded payload from the upstream into the validation state (the machine's
    /// `.buffering` or `.drainingRejected`) and reports when the body ended or passed the limit.
    func pumpValidatedBody(_ ex: Exchange) {
        guard let u = ex.upstream, let v = ex.validation else { return }
        let buffering = ex.machine.validation == .buffering
        do throws(WireError) {
            let stop = try BodyPump.pump(u.stream, &ex.responseDecoder) { n in
                let keep = buffering ? n : min(n, v.sampleRoom)
                if keep > 0 { u.stream.withInput(max: keep) { v.body.append(contentsOf: $0) } }
                u.stream.drainInput(n)
                v.payloadBytes += n
                return v.payloadBytes <= v.config.maxBodyBytes   // over the limit: stop reading
            }
            if stop == .needMore { return }
        } catch {
            dropUpstream(ex)   // never reused
            run(ex.machine.upstreamFailed(.malformed), ex) { GatewayError(upstreamWire: error) }
            return
        }
        if v.payloadBytes > v.config.maxBodyBytes {
            bodyOverLimit(ex, v)
        } else {
            run(ex.machine.responseBodyEnded(), ex)
        }
    }

    /// The upstream closed, failed or went silent while its body was being read for validation.
    func validatedUpstreamEnded(_ ex: Exchange, _ u: UpstreamConnection, event: StreamEvent) {
        if event == .eof {
            pumpValidatedBody(ex)
            guard exchange === ex, ex.machine.response == .validating else { return }
        }
        dropUpstream(ex)
        let timeout = event == .readTimeout || event == .writeTimeout
        var cause = "upstream \(timeout ? "timed out" : "failed") mid-body"
        if event == .eof {
            do throws(WireError) {
                try ex.responseDecoder.finishOnEOF()
                run(ex.machine.responseBodyEnded(), ex)
                return
            } catch {
                cause = "upstream closed mid-body: \(error.detail)"
            }
        }
        let failure: ExchangeMachine.UpstreamFailure = timeout ? .timeout : .closed
        run(ex.machine.upstreamFailed(failure), ex) {
            GatewayError(timeout ? .upstreamTimeout : .upstreamClosed, status: failure.status, message: cause, source: .upstream)
        }
    }

    private func bodyOverLimit(_ ex: Exchange, _ v: ResponseValidation) {
        if v.rejection == nil { v.rejection = .bodyTooLarge(limit: v.config.maxBodyBytes) }
        run(ex.machine.responseBodyOverLimit(), ex)
    }

    // MARK: deciding

    /// The buffered body is whole (`runBodyValidator`): the response body filter's verdict goes
    /// to the machine.
    func runBodyValidator(_ ex: Exchange) {
        guard let v = ex.validation else { return }
        run(ex.machine.responseBodyJudged(accepted: worker.phases.upstreamResponseBodyFilter(ex, v).accepted), ex)
    }

    /// Report-only, over `max_body_bytes`: what was read goes to the client, the rest streams.
    func relayBodyOverLimit(_ ex: Exchange) {
        guard let v = ex.validation else { return }
        writeResponseHead(ex)
        let read = v.body
        v.body = Array(v.body.prefix(ResponseValidation.sampleBytes))
        if ex.responseOut == .chunked { stream.write(ChunkedEncoder.chunkHeader(size: read.count)) }
        stream.write(read)
        if ex.responseOut == .chunked { stream.write(ChunkedEncoder.chunkTrailer) }
        ex.bytesOut += UInt64(read.count)
        pumpResponseBody()
    }

    /// Enforce: `reject_status` and the JSON reject body; the upstream is kept only when its body
    /// was read whole and it is keep-alive (`upstreamReusable`).
    func answerReject(_ ex: Exchange, upstreamReusable: Bool) {
        guard let v = ex.validation, let error = v.rejection else { return }
        releaseUpstream(ex, bodyReadToEnd: upstreamReusable)
        respondError(GatewayError(rejected: error, status: v.config.rejectStatus, facts: v.facts),
                     exchange: ex, requestID: ex.id)
    }

    // MARK: delivering

    /// The head with `Content-Length` framing for the buffered body (as the validator made it,
    /// or untouched in report-only mode), then the body, at the client's pace.
    func deliverValidatedBody(_ ex: Exchange) {
        releaseUpstream(ex, bodyReadToEnd: true)
        guard let v = ex.validation, let head = ex.response else { return }
        let body = v.rejection == nil ? (v.transformed ?? v.body) : v.body
        let framing: BodyFraming = head.framing(requestMethod: ex.request.method) == .none ? .none : .length(UInt64(body.count))
        ex.responseOut = framing == .none ? .none : .length
        ex.clientKeepAlive = ex.machine.clientKeepAlive(requestKeepAlive: ex.request.keepAlive, clientContinues: clientContinues)
        writeResponseHead(ex, framing: framing)
        if v.rejection == nil {
            v.body = []
        } else {
            v.body = Array(v.body.prefix(ResponseValidation.sampleBytes))
        }
        v.out = framing == .none ? [] : body
        v.outOffset = 0
        continueDelivery(ex)
    }

    /// Writes the next slices of the validated body; pauses above the client's high watermark
    /// (resumed by `streamWritable`).
    func continueDelivery(_ ex: Exchange) {
        guard let v = ex.validation else { return }
        while v.outOffset < v.out.count {
            let n = min(v.out.count - v.outOffset, Self.writeHighWatermark)
            let start = v.outOffset
            v.out.withUnsafeBytes { stream.write(UnsafeRawBufferPointer(rebasing: $0[start..<(start + n)])) }
            v.outOffset += n
            ex.bytesOut += UInt64(n)
            if stream.outputLength >= Self.writeHighWatermark {
                stream.setWriteLowWatermark(Self.writeHighWatermark / 2)
                return
            }
        }
        v.out = []
        responseDelivered(ex)   // the upstream was released in `deliverValidatedBody`
    }
}
