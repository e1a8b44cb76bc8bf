import AirlockIO
import AirlockSerialization
import AirlockWire
import AirlockSession
import Logging

/// The validate phase: between the parsed response head and the relay to the client. Runs only
/// on routes with a `response:` block (`RouteConfig.validator`); see `ResponseValidation.Phase`.
extension ClientConnection {
    /// Called by `startResponse` before the head goes to the client, with the upstream
    /// response filter's verdict. Returns true when validation has taken the response over
    /// (the head is not written yet); false to stream it as usual (accepted on the head, or a
    /// report-only reject that is sampled on the way).
    func applyResponseFilter(_ ex: Exchange, _ u: UpstreamConnection, _ verdict: ResponseFilterVerdict) -> Bool {
        switch verdict {
        case .relay:
            return false
        case .relaySampled(let v):
            ex.validation = v
            return false
        case .drainRejected(let v), .buffer(let v):
            ex.validation = v
            pumpValidatedBody(ex, u, v)
            return true
        case .overLimit(let v):
            ex.validation = v
            bodyOverLimit(ex, v)   // declared too large: not a byte is read
            return true
        }
    }

    // MARK: reading the body

    /// Reads decoded payload from the upstream into the validation state (`.buffering`,
    /// `.drainingRejected`) and acts when the body is complete or over the limit.
    func pumpValidatedBody(_ ex: Exchange, _ u: UpstreamConnection, _ v: ResponseValidation) {
        guard v.phase == .buffering || v.phase == .drainingRejected else { return }
        do throws(WireError) {
            while !ex.responseDecoder.isComplete {
                let available = u.stream.inputLength
                let event: BodyDecoder.Event = try u.stream.withInput(max: BodyDecoder.maxLineBytes) { buf throws(WireError) in
                    try ex.responseDecoder.next(buf, available: available)
                }
                switch event {
                case .data(let n):
                    let keep = v.phase == .buffering ? n : min(n, v.sampleRoom)
                    if keep > 0 { u.stream.withInput(max: keep) { v.body.append(contentsOf: $0) } }
                    u.stream.drainInput(n)
                    v.payloadBytes += n
                    if v.payloadBytes > v.config.maxBodyBytes && !ex.responseDecoder.isComplete {
                        bodyOverLimit(ex, v)
                        return
                    }
                case .framing(let n), .end(let n):
                    u.stream.drainInput(n)
                case .needMore:
                    return
                }
            }
        } catch {
            ex.upstream = nil
            u.close()   // never reused
            failValidated(ex, v, GatewayError(upstreamWire: error))
            return
        }
        if v.payloadBytes > v.config.maxBodyBytes {
            bodyOverLimit(ex, v)
        } else {
            bodyComplete(ex, v)
        }
    }

    /// The upstream closed, failed or went silent while its body was being read for validation.
    func validatedUpstreamEnded(_ ex: Exchange, _ u: UpstreamConnection, _ v: ResponseValidation, event: StreamEvent) {
        if event == .eof {
            pumpValidatedBody(ex, u, v)
            guard exchange === ex, v.phase == .buffering || v.phase == .drainingRejected else { return }
        }
        ex.upstream = nil
        u.close()
        if event == .eof {
            do throws(WireError) {
                try ex.responseDecoder.finishOnEOF()
                bodyComplete(ex, v)
                return
            } catch {
                failValidated(ex, v, GatewayError(.upstreamClosed, status: 502,
                                                  message: "upstream closed mid-body: \(error.detail)", source: .upstream))
                return
            }
        }
        let timeout = event == .readTimeout || event == .writeTimeout
        failValidated(ex, v, GatewayError(timeout ? .upstreamTimeout : .upstreamClosed, status: timeout ? 504 : 502,
                                          message: "upstream \(timeout ? "timed out" : "failed") mid-body",
                                          source: .upstream))
    }

    /// Nothing has reached the client yet: a rejected response is still answered as a reject,
    /// anything else as the upstream failure it is.
    private func failValidated(_ ex: Exchange, _ v: ResponseValidation, _ e: GatewayError) {
        if v.phase == .drainingRejected {
            reject(ex, v, upstreamReusable: false)
        } else {
            failExchange(e)
        }
    }

    // MARK: deciding

    private func bodyComplete(_ ex: Exchange, _ v: ResponseValidation) {
        if v.phase == .drainingRejected {
            reject(ex, v, upstreamReusable: true)
            return
        }
        switch v.validator.validate(head: v.facts, body: v.body) {
        case .accepted(let transformed):
            deliver(ex, v, transformed ?? v.body)
        case .rejected(let error):
            v.rejection = error
            if v.config.mode == .enforce {
                reject(ex, v, upstreamReusable: true)
            } else {
                deliver(ex, v, v.body)   // report-only: untouched
            }
        }
    }

    /// Over `max_body_bytes`. Enforce: stop reading, close the upstream, answer the reject.
    /// Report-only: relay what was read and stream the rest as usual.
    private func bodyOverLimit(_ ex: Exchange, _ v: ResponseValidation) {
        if v.rejection == nil { v.rejection = .bodyTooLarge(limit: v.config.maxBodyBytes) }
        if v.config.mode == .enforce {
            reject(ex, v, upstreamReusable: false)
            return
        }
        v.phase = .relaying
        writeResponseHead(ex)
        let read = v.body
        v.body = Array(v.body.prefix(ResponseValidation.sampleBytes))
        if ex.responseOut == .chunked { stream.write(ChunkedEncoder.chunkHeader(size: read.count)) }
        stream.write(read)
        if ex.responseOut == .chunked { stream.write(ChunkedEncoder.chunkTrailer) }
        ex.bytesOut += UInt64(read.count)
        pumpResponseBody()
    }

    /// Enforce mode: `reject_status` and the JSON reject body; the upstream is kept only when
    /// its body was read whole and it is keep-alive.
    private func reject(_ ex: Exchange, _ v: ResponseValidation, upstreamReusable: Bool) {
        guard let error = v.rejection else { return }
        releaseValidatedUpstream(ex, reusable: upstreamReusable)
        respondError(GatewayError(rejected: error, status: v.config.rejectStatus, facts: v.facts),
                     exchange: ex, requestID: ex.id)
    }

    // MARK: delivering

    /// The head with `Content-Length` framing for the buffered body, then the body, at the
    /// client's pace.
    private func deliver(_ ex: Exchange, _ v: ResponseValidation, _ body: [UInt8]) {
        releaseValidatedUpstream(ex, reusable: true)
        guard let head = ex.response else { return }
        let framing: BodyFraming = head.framing(requestMethod: ex.request.method) == .none ? .none : .length(UInt64(body.count))
        ex.responseOut = framing == .none ? .none : .length
        ex.clientKeepAlive = ex.request.keepAlive && clientContinues && ex.requestBodyDone
        writeResponseHead(ex, framing: framing)
        if v.rejection == nil {
            v.body = []
        } else {
            v.body = Array(v.body.prefix(ResponseValidation.sampleBytes))
        }
        v.out = framing == .none ? [] : body
        v.outOffset = 0
        v.phase = .delivering
        continueDelivery(ex, v)
    }

    /// Writes the next slices of the validated body; pauses above the client's high watermark
    /// (resumed by `streamWritable`).
    func continueDelivery(_ ex: Exchange, _ v: ResponseValidation) {
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
        responseDelivered(ex, upstreamReusable: true)   // released already, in `deliver`
    }

    /// The upstream's part of the exchange's end, done as soon as its body has been read.
    private func releaseValidatedUpstream(_ ex: Exchange, reusable: Bool) {
        releaseUpstream(ex, bodyReadToEnd: reusable)
    }
}
