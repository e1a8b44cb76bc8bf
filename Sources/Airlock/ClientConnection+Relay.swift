import AirlockSerialization
import AirlockIO
import AirlockSession
import AirlockWire

/// Relay phases: request body up, response head and body down, with backpressure on
/// both directions (a slow reader on either side slows the other).
extension ClientConnection {
    // MARK: request body

    func pumpRequestBody() {
        guard phase == .forwarding, let ex = exchange, !ex.requestBodyDone else { return }
        guard let u = ex.upstream, u.state == .active else { return }   // still connecting: bytes wait
        do throws(WireError) {
            try relayBody(from: stream, to: u.stream, decoder: &ex.requestDecoder, out: ex.requestOut) { n in
                ex.bytesIn += UInt64(n)
            }
        } catch {
            // The client's body is malformed: nothing more goes upstream.
            ex.machine.requestBodyFailed()
            ex.upstream = nil
            u.close()
            respondError(GatewayError(wire: error), exchange: ex, requestID: ex.id)
            return
        }
        if ex.requestDecoder.isComplete {
            ex.machine.requestBodyComplete()
            ex.metrics.requestSent = EventLoop.nowNanos()
        } else if u.pendingOutput >= Self.writeHighWatermark {
            let was = ex.machine.isSuspended
            performFlow(ex.machine.upstreamOutputFilled(), ex, wasSuspended: was)
        } else if lifecycle.input == .halfClosed {
            // Everything the client sent before its close has been decoded: the body is cut off.
            perform(ex.machine.requestBodyCutOff(), ex, event: .eof)
        }
    }

    func upstreamWritable(_ u: UpstreamConnection) {
        guard let ex = exchange, !ex.requestBodyDone else { return }
        let was = ex.machine.isSuspended
        performFlow(ex.machine.upstreamOutputDrained(), ex, wasSuspended: was)
        // Bytes already buffered do not fire the read callback again: pump them now.
        pumpRequestBody()
    }

    /// Moves decoded payload from `src` to `dst`, re-framing chunked output.
    /// Returns when the body is complete or the input has nothing more to decode.
    /// `sample` (a report-only reject) keeps a copy of the first payload bytes for its record.
    private func relayBody(from src: Stream, to dst: Stream, decoder: inout BodyDecoder, out: OutFraming,
                           bounded: Bool = true, sample: ResponseValidation? = nil,
                           counted: (Int) -> Void) throws(WireError) {
        while !decoder.isComplete {
            let available = src.inputLength
            let event: BodyDecoder.Event = try src.withInput(max: BodyDecoder.maxLineBytes) { buf throws(WireError) in
                try decoder.next(buf, available: available)
            }
            switch event {
            case .data(let n):
                if let sample, sample.sampleRoom > 0 {
                    src.withInput(max: min(n, sample.sampleRoom)) { sample.body.append(contentsOf: $0) }
                }
                if out == .chunked { dst.write(ChunkedEncoder.chunkHeader(size: n)) }
                src.moveInput(n, to: dst)
                if out == .chunked { dst.write(ChunkedEncoder.chunkTrailer) }
                counted(n)
                if bounded && dst.outputLength >= Self.writeHighWatermark { return }
            case .framing(let n):
                src.drainInput(n)
            case .end(let n):
                src.drainInput(n)
                if out == .chunked { dst.write(ChunkedEncoder.last) }
            case .needMore:
                return
            }
        }
    }

    // MARK: response

    func upstreamReadable(_ u: UpstreamConnection) {
        guard phase == .forwarding, let ex = exchange, ex.upstream === u else { return }
        if u.stream.inputLength > 0 {
            ex.machine.upstreamBytesArrived()
            if ex.metrics.firstResponseByte == 0 { ex.metrics.firstResponseByte = EventLoop.nowNanos() }
        }
        if ex.machine.awaitingResponseHead {
            readResponseHead(ex, u)
        } else {
            pumpResponseBody()
        }
    }

    private func readResponseHead(_ ex: Exchange, _ u: UpstreamConnection) {
        while ex.machine.awaitingResponseHead {
            let n: Int?
            do {
                n = try u.stream.withInput(max: ex.responseScanner.window) { buf throws(WireError) in
                    try ex.responseScanner.scan(buf)
                }
            } catch {
                upstreamMalformed(ex, u, error)
                return
            }
            guard let len = n else { return }
            let parsed: Result<ResponseHead, WireError> = u.stream.withInput(max: len) { buf in
                let spare = worker.takeSpareHeaders()
                do throws(WireError) {
                    return .success(try ResponseParser.parse(buf, reusing: consume spare))
                } catch {
                    return .failure(error)
                }
            }
            u.stream.drainInput(len)
            ex.responseScanner.reset()
            let head: ResponseHead
            switch parsed {
            case .success(let h): head = h
            case .failure(let e):
                upstreamMalformed(ex, u, e)
                return
            }
            switch ex.machine.responseHeadReceived(status: head.status, validates: ex.route.validator != nil) {
            case .absorbInterim:
                continue   // interim (100, 103): ours to absorb
            case .respondError:
                upstreamMalformed(ex, u, nil, detail: "101 Switching Protocols without an Upgrade request")
                return
            default:
                startResponse(ex, u, head)
            }
        }
    }

    private func startResponse(_ ex: Exchange, _ u: UpstreamConnection, _ head: ResponseHead) {
        ex.response = head
        ex.responseStatus = head.status
        ex.responseStartedAt = EventLoop.nowNanos()
        let framing = head.framing(requestMethod: ex.request.method)
        ex.responseFraming = framing
        ex.responseDecoder = BodyDecoder(framing: framing)
        ex.responseOut = ForwardingHeads.responseFraming(framing, clientVersion: ex.request.version)
        ex.clientKeepAlive = ex.request.keepAlive && clientContinues && ex.responseOut != .close
            && ex.requestBodyDone
        if ex.route.validator != nil {
            // The upstream response filter (validators) sees the head before the client does.
            if applyResponseFilter(ex, u, worker.phases.upstreamResponseFilter(ex, head, framing: framing)) { return }
            ex.machine.validatorReleasedHead()   // accepted on sight, or a report-only reject
        }
        writeResponseHead(ex, framing: framing)
        pumpResponseBody()
    }

    /// The one place a relayed response head is written (streamed, or after validation with
    /// the framing of the buffered body): re-encoded from the parsed head, never copied.
    func writeResponseHead(_ ex: Exchange, framing: BodyFraming? = nil) {
        guard let head = ex.response else { return }
        worker.headWriter.reset()
        ForwardingHeads.response(head, framing: framing ?? head.framing(requestMethod: ex.request.method),
                                 out: ex.responseOut, requestMethod: ex.request.method,
                                 keepAlive: ex.clientKeepAlive, clientVersion: ex.request.version,
                                 viaToken: worker.context.viaToken, viaToken11: worker.context.via11,
                                 idSerial: ex.id.serial, clientID: ex.id.client, idPrefix: worker.idPrefix, into: &worker.headWriter)
        worker.headWriter.withBytes { stream.write($0) }
        ex.machine.validatorReleasedHead()
    }

    func pumpResponseBody(bounded: Bool = true) {
        guard phase == .forwarding, let ex = exchange, let u = ex.upstream, !ex.machine.awaitingResponseHead else { return }
        if let v = ex.validation, v.phase != .relaying {
            pumpValidatedBody(ex, u, v)
            return
        }
        do throws(WireError) {
            try relayBody(from: u.stream, to: stream, decoder: &ex.responseDecoder, out: ex.responseOut,
                          bounded: bounded, sample: ex.validation) { n in
                ex.bytesOut += UInt64(n)
            }
        } catch {
            upstreamMalformed(ex, u, error)
            return
        }
        if ex.responseDecoder.isComplete {
            endExchange(ex, .completed(upstreamReusable: true))
        } else if stream.outputLength >= Self.writeHighWatermark {
            let was = ex.machine.isSuspended
            performFlow(ex.machine.clientOutputFilled(), ex, wasSuspended: was)
        }
    }

    /// The upstream closed, errored or went silent after the response head.
    func upstreamEndedDuringBody(_ ex: Exchange, _ u: UpstreamConnection, event: StreamEvent) {
        if let v = ex.validation, v.phase != .relaying {
            validatedUpstreamEnded(ex, u, v, event: event)
            return
        }
        let failure: GatewayError
        let timeout = event == .readTimeout || event == .writeTimeout
        if event == .eof {
            // Bytes may still be buffered: relay them all before judging the end.
            pumpResponseBody(bounded: false)
            if exchange !== ex { return }   // the body was complete after all
            ex.upstream = nil
            u.close()
            do throws(WireError) {
                try ex.responseDecoder.finishOnEOF()   // a close-delimited body ends here
                if ex.responseOut == .chunked { stream.write(ChunkedEncoder.last) }
                ex.clientKeepAlive = ex.clientKeepAlive && ex.responseOut != .close
                endExchange(ex, .completed(upstreamReusable: false))
                return
            } catch {
                failure = GatewayError(.upstreamClosed, status: ex.responseStatus,
                                       message: "upstream closed mid-body: \(error.detail)", source: .upstream)
            }
        } else {
            failure = GatewayError(timeout ? .upstreamTimeout : .upstreamClosed, status: ex.responseStatus,
                                   message: "upstream \(timeout ? "timed out" : "failed") mid-body", source: .upstream)
        }
        // The client must see an incomplete response, never a complete one: send what
        // arrived, then cut the connection without finishing the framing.
        _ = ex.machine.upstreamFailed(timeout ? .timeout : .closed)
        endExchange(ex, .truncated(failure))
    }

    private func upstreamMalformed(_ ex: Exchange, _ u: UpstreamConnection, _ error: WireError?, detail: String = "") {
        ex.upstream = nil
        u.close()   // never reused
        let e = error.map { GatewayError(upstreamWire: $0) }
            ?? GatewayError(.upstreamMalformed, status: 502, message: detail, source: .upstream)
        if ex.machine.upstreamFailed(.malformed) == .truncateClient {
            endExchange(ex, .truncated(e))
        } else {
            failExchange(e)
        }
    }

    // MARK: completion

    /// The upstream's part is over: the machine decides whether the connection goes back to
    /// the pool (the one place reuse is decided; `ExchangeMachine.reuseDecision`).
    func releaseUpstream(_ ex: Exchange, bodyReadToEnd: Bool) {
        guard let u = ex.upstream else { return }
        ex.upstream = nil
        let decision = ex.machine.reuseDecision(upstreamKeepAlive: ex.response?.keepAlive ?? false, bodyReadToEnd: bodyReadToEnd,
                                                buffersEmpty: u.buffersEmpty)
        switch decision {
        case .park:
            worker.park(u)
            lastUpstream = u
        case .close:
            u.close()
        }
    }

    /// Performs what the machine answered to a client-side event.
    func perform(_ action: ExchangeMachine.Action, _ ex: Exchange, event: StreamEvent) {
        switch action {
        case .keepServingHalfClosedClient:
            lifecycle.inputClosed()
        case .relayBufferedBody:
            lifecycle.inputClosed()
            pumpRequestBody()   // decides now, or once the upstream is ready
        case .abort:
            clientAborted(event)
        default:
            break
        }
    }

    func clientAborted(_ event: StreamEvent) {
        guard let ex = exchange else { close(); return }
        _ = ex.machine.clientGone()
        let why: String
        switch event {
        case .eof: why = "client closed the connection"
        case .writeTimeout: why = "client stopped reading"
        default: why = "client connection failed"
        }
        endExchange(ex, .aborted(GatewayError(.clientAborted, status: 499, message: why, source: .client)))
    }
}
