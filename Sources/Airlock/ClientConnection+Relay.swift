import AirlockConfig
import AirlockSerialization
import AirlockIO
import AirlockSerialization
import AirlockSession
import AirlockWire

/// Relay phases: request body up, response head and body down, with backpressure on
/// both directions (a slow reader on either side slows the other).
extension ClientConnection {
    // MARK: request body

    func pumpRequestBody() {
        guard phase == .forwarding, let ex = exchange, !ex.requestBodyDone else { return }
        if ex.machine.judgingRestOfRequestBody {
            judgeRestOfRequestBody(ex)
            return
        }
        guard let u = ex.upstream, u.state == .active else { return }   // still connecting: bytes wait
        if ex.multipart != nil {
            pumpMultipartBody(ex, u)
            return
        }
        if let t = ex.routeRef.throttle {
            pumpThrottledBody(ex, u, t)
            return
        }
        do throws(WireError) {
            try relayBody(from: stream, to: u.stream, decoder: &ex.requestDecoder, out: ex.requestOut) { n in
                ex.bytesIn += UInt64(n)
            }
        } catch {
            // The client's body is malformed: nothing more goes upstream.
            run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
            return
        }
        if ex.requestDecoder.isComplete {
            ex.metrics.requestSent = EventLoop.nowNanos()
            run(ex.machine.requestBodyComplete(), ex)
        } else if u.pendingOutput >= Self.writeHighWatermark {
            run(ex.machine.upstreamOutputFilled(), ex)
        } else if lifecycle.input == .halfClosed {
            // Everything the client sent before its close has been decoded: the body is cut off.
            run(ex.machine.requestBodyCutOff(), ex)
        }
    }

    /// The response is whole and its upstream gone, the client's body still coming
    /// (`ExchangeMachine.judgeRestOfRequestBody`): the rest is decoded and dropped, so that a
    /// malformed body is logged as the client's error (`requestFailed`). A body that ends, a
    /// client that stops sending (its close), or `header_timeout` ends the exchange completed.
    func judgeRestOfRequestBody(_ ex: Exchange) {
        do throws(WireError) {
            let stop = try BodyPump.pump(stream, &ex.requestDecoder) { n in
                stream.drainInput(n)
                ex.bytesIn += UInt64(n)
                return true
            }
            if stop != .complete {
                if lifecycle.input == .halfClosed { run(ex.machine.requestBodyCutOff(), ex) }
                return
            }
        } catch {
            run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
            return
        }
        run(ex.machine.requestBodyComplete(), ex)
    }

    /// The request body of a `validate_multipart` route: each payload slice is fed to the
    /// validator first, and only what it allows goes upstream; the last bytes (what may be the
    /// close delimiter) wait until it says the body is whole. A broken body is answered 400 and
    /// its upstream connection closed before its last byte went up.
    private func pumpMultipartBody(_ ex: Exchange, _ u: UpstreamConnection) {
        var failure: GatewayError?
        do throws(WireError) {
            let stop = try BodyPump.pump(stream, &ex.requestDecoder) { n in
                stream.withInput(max: n) { bytes in
                    ex.phaseState.multipartHeld.append(contentsOf: bytes)
                    if case .invalid(let e) = ex.phaseState.multipart!.feed(bytes) { failure = refuseMultipart(ex, e) }
                }
                stream.drainInput(n)
                ex.bytesIn += UInt64(n)
                if failure == nil { forwardMultipart(ex, u) }
                return failure == nil
            }
            if stop == .needMore {
                if lifecycle.input == .halfClosed { run(ex.machine.requestBodyCutOff(), ex) }
                else if u.pendingOutput >= Self.writeHighWatermark { run(ex.machine.upstreamOutputFilled(), ex) }
                return
            }
        } catch {
            failure = GatewayError(wire: error)
        }
        if failure == nil, case .invalid(let e) = ex.phaseState.multipart!.finish() {
            failure = refuseMultipart(ex, e)   // the body ended without its close delimiter
        }
        if let failure {
            run(ex.machine.requestBodyFailed(), ex) { failure }   // the upstream never got the body's last bytes
            return
        }
        forwardMultipart(ex, u)   // complete: the rest goes
        if ex.requestOut == .chunked { u.send(ChunkedEncoder.last) }
        ex.metrics.requestSent = EventLoop.nowNanos()
        run(ex.machine.requestBodyComplete(), ex)
    }

    /// The request body of a `throttle` route (AF's throttleBandwidth): at most `packet_bytes`
    /// of payload go up, then the client is not read for `delay`, then the next packet; the
    /// worker never blocks (a timer opens each packet).
    private func pumpThrottledBody(_ ex: Exchange, _ u: UpstreamConnection, _ t: RequestSerializationConfig.Throttle) {
        if ex.phaseState.throttleTimer == nil { ex.phaseState.throttleBudget = t.packetBytes }
        do throws(WireError) {
            while !ex.requestDecoder.isComplete {
                if u.pendingOutput >= Self.writeHighWatermark {   // the upstream is slower still
                    run(ex.machine.upstreamOutputFilled(), ex)
                    return
                }
                if ex.phaseState.throttleBudget == 0 {
                    if ex.phaseState.throttleTimer?.isScheduled == true { return }
                    stream.setReading(false)
                    let timer = ex.phaseState.throttleTimer ?? Timer(loop: worker.loop) { [weak self, weak ex] in
                        guard let self, let ex, self.exchange === ex, !ex.requestBodyDone else { return }
                        ex.phaseState.throttleBudget = t.packetBytes
                        if !ex.machine.isSuspended { self.stream.setReading(true) }
                        self.pumpRequestBody()
                    }
                    ex.phaseState.throttleTimer = timer
                    timer.schedule(after: t.delay)
                    return
                }
                let chunked = ex.requestOut == .chunked
                let stop = try BodyPump.pump(stream, &ex.requestDecoder, limit: { ex.phaseState.throttleBudget },
                                             end: { if chunked { u.send(ChunkedEncoder.last) } }) { n in
                    if chunked { u.send(ChunkedEncoder.chunkHeader(size: n)) }
                    stream.moveInput(n, to: u.stream)
                    if chunked { u.send(ChunkedEncoder.chunkTrailer) }
                    ex.phaseState.throttleBudget -= n
                    ex.bytesIn += UInt64(n)
                    return ex.phaseState.throttleBudget > 0 && u.pendingOutput < Self.writeHighWatermark
                }
                if stop == .complete { break }
                if stop == .needMore {
                    if lifecycle.input == .halfClosed { run(ex.machine.requestBodyCutOff(), ex) }
                    return
                }
            }
        } catch {
            run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
            return
        }
        ex.phaseState.throttleTimer?.cancel()
        ex.metrics.requestSent = EventLoop.nowNanos()
        run(ex.machine.requestBodyComplete(), ex)
    }

    /// Sends what the multipart validator allows of the held bytes.
    private func forwardMultipart(_ ex: Exchange, _ u: UpstreamConnection) {
        let allowed = ex.phaseState.multipart!.forwardable - ex.phaseState.multipartSent
        guard allowed > 0 else { return }
        let n = min(allowed, ex.phaseState.multipartHeld.count)
        ex.phaseState.multipartHeld.withUnsafeBytes { all in
            let slice = UnsafeRawBufferPointer(rebasing: all[0..<n])
            if ex.requestOut == .chunked { u.send(ChunkedEncoder.chunkHeader(size: n)) }
            u.send(slice)
            if ex.requestOut == .chunked { u.send(ChunkedEncoder.chunkTrailer) }
        }
        ex.phaseState.multipartHeld.removeFirst(n)
        ex.phaseState.multipartSent += n
    }

    /// The refusal of a broken multipart body, recorded as a request reject (with the bytes
    /// still held as its sample).
    private func refuseMultipart(_ ex: Exchange, _ e: MultipartError) -> GatewayError {
        ex.requestRejection = RequestRejection(reason: e.reason, message: e.message,
                                               bodySample: Array(ex.phaseState.multipartHeld.prefix(RequestRejection.sampleLimit)))
        return Self.multipartRefusal(e)
    }

    static func multipartRefusal(_ e: MultipartError) -> GatewayError {
        var g = GatewayError(.requestSerializationFailed, status: 400, message: e.message, source: .client, mustClose: true)
        g.extra = [("reason", .string(e.reason))]
        return g
    }

    func upstreamWritable(_ u: UpstreamConnection) {
        guard let ex = exchange, !ex.requestBodyDone else { return }
        run(ex.machine.upstreamOutputDrained(), ex)
        // Bytes already buffered do not fire the read callback again: pump them now.
        pumpRequestBody()
    }

    /// Moves decoded payload from `src` to `dst`, re-framing chunked output.
    /// Returns when the body is complete or the input has nothing more to decode.
    /// `sample` (a report-only reject) keeps a copy of the first payload bytes for its record.
    private func relayBody(from src: Stream, to dst: Stream, decoder: inout BodyDecoder, out: OutFraming,
                           bounded: Bool = true, sample: ResponseValidation? = nil,
                           counted: (Int) -> Void) throws(WireError) {
        let chunked = out == .chunked
        try BodyPump.pump(src, &decoder, end: { if chunked { dst.write(ChunkedEncoder.last) } }) { n in
            if let sample, sample.sampleRoom > 0 {
                src.withInput(max: min(n, sample.sampleRoom)) { sample.body.append(contentsOf: $0) }
            }
            if chunked { dst.write(ChunkedEncoder.chunkHeader(size: n)) }
            src.moveInput(n, to: dst)
            if chunked { dst.write(ChunkedEncoder.chunkTrailer) }
            counted(n)
            return !bounded || dst.outputLength < Self.writeHighWatermark
        }
    }

    // MARK: response

    func upstreamReadable(_ u: UpstreamConnection) {
        guard phase == .forwarding, let ex = exchange, ex.upstream === u else { return }
        if u.stream.inputLength > 0 {
            run(ex.machine.upstreamBytesArrived(), ex)
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
            if head.status >= 200 { startResponse(ex, head) }   // interim heads (100, 103) are ours to absorb
            run(ex.machine.responseHeadReceived(status: head.status, validates: ex.route.validator != nil), ex) {
                GatewayError(.upstreamMalformed, status: ExchangeMachine.UpstreamFailure.malformed.status,
                             message: "101 Switching Protocols without an Upgrade request", source: .upstream)
            }
        }
    }

    /// A final head arrived: what the relay needs of it, before the machine decides what to do.
    private func startResponse(_ ex: Exchange, _ head: ResponseHead) {
        if ex.reachabilityTrial {
            // The trial was answered: the circuit closes (a pooled connection never reported
            // a connect).
            ex.reachabilityTrial = false
            reportReachability(ex, .connected)
        }
        ex.response = head
        ex.responseStatus = head.status
        ex.responseStartedAt = EventLoop.nowNanos()
        let framing = head.framing(requestMethod: ex.request.method)
        ex.responseFraming = framing
        ex.responseDecoder = BodyDecoder(framing: framing)
        ex.responseOut = ForwardingHeads.responseFraming(framing, clientVersion: ex.request.version)
        ex.clientKeepAlive = ex.machine.clientKeepAlive(requestKeepAlive: ex.request.keepAlive, clientContinues: clientContinues,
                                                        closeDelimited: ex.responseOut == .close)
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
    }

    func pumpResponseBody(bounded: Bool = true) {
        guard phase == .forwarding, let ex = exchange, let u = ex.upstream, !ex.machine.awaitingResponseHead else { return }
        if ex.machine.response == .validating {
            pumpValidatedBody(ex)
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
            responseDelivered(ex)
        } else if stream.outputLength >= Self.writeHighWatermark {
            run(ex.machine.clientOutputFilled(), ex)
        }
    }

    /// The upstream closed, errored or went silent after the response head.
    func upstreamEndedDuringBody(_ ex: Exchange, _ u: UpstreamConnection, event: StreamEvent) {
        if ex.machine.response == .validating {
            validatedUpstreamEnded(ex, u, event: event)
            return
        }
        let timeout = event == .readTimeout || event == .writeTimeout
        var cause = "upstream \(timeout ? "timed out" : "failed") mid-body"
        if event == .eof {
            // Bytes may still be buffered: relay them all before judging the end.
            pumpResponseBody(bounded: false)
            if exchange !== ex { return }   // the body was complete after all
            dropUpstream(ex)
            do throws(WireError) {
                try ex.responseDecoder.finishOnEOF()   // a close-delimited body ends here
                if ex.responseOut == .chunked { stream.write(ChunkedEncoder.last) }
                responseDelivered(ex)
                return
            } catch {
                cause = "upstream closed mid-body: \(error.detail)"
            }
        }
        // The client must see an incomplete response, never a complete one: send what
        // arrived, then cut the connection without finishing the framing.
        run(ex.machine.upstreamFailed(timeout ? .timeout : .closed), ex) {
            GatewayError(timeout ? .upstreamTimeout : .upstreamClosed, status: ex.responseStatus, message: cause,
                         source: .upstream)
        }
    }

    /// A response that is not HTTP/1.1: the upstream connection is never reused.
    func upstreamMalformed(_ ex: Exchange, _ u: UpstreamConnection, _ error: WireError) {
        dropUpstream(ex)
        run(ex.machine.upstreamFailed(.malformed), ex) { GatewayError(upstreamWire: error) }
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

    func clientAborted(_ event: StreamEvent) {
        guard let ex = exchange else { close(); return }
        run(ex.machine.clientGone(), ex) { Self.clientAbort(event) }
    }
}
