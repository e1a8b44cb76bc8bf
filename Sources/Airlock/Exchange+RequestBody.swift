import AirlockConfig
import AirlockSerialization
import AirlockIO
import AirlockSerialization
import AirlockSession
import AirlockWire

/// The request body going up: relayed, paced (`throttle`), checked as multipart, or judged
/// after the response; every loop is `BodyPump`'s, and a slow upstream slows the client
/// (backpressure through the machine's `pauseClientReads`).
extension Exchange {
    func pumpRequestBody() {
        guard client.phase == .forwarding, isCurrent, !requestBodyDone else { return }
        if machine.judgingRestOfRequestBody {
            judgeRestOfRequestBody()
            return
        }
        guard let u = upstream, u.state == .active else { return }   // still connecting: bytes wait
        if multipart != nil {
            pumpMultipartBody(u)
            return
        }
        if let t = routeRef.throttle {
            pumpThrottledBody(u, t)
            return
        }
        do throws(WireError) {
            try BodyPump.relay(from: clientStream, to: u.stream, decoder: &requestDecoder, out: requestOut,
                               highWatermark: ClientConnection.writeHighWatermark) { n in
                bytesIn += UInt64(n)
            }
        } catch {
            // The client's body is malformed: nothing more goes upstream.
            run(machine.requestBodyFailed()) { GatewayError(wire: error) }
            return
        }
        if requestDecoder.isComplete {
            metrics.requestSent = EventLoop.nowNanos()
            run(machine.requestBodyComplete())
        } else if u.pendingOutput >= ClientConnection.writeHighWatermark {
            run(machine.upstreamOutputFilled())
        } else if client.lifecycle.input == .halfClosed {
            // Everything the client sent before its close has been decoded: the body is cut off.
            run(machine.requestBodyCutOff())
        } else if !clientStream.isSplicing {
            spliceRequestBody(u)
        }
    }

    /// A body relayed as it is (no multipart check, no pacing, not collected) goes socket to
    /// socket for the rest of each payload section once the bytes read with the head went the
    /// copying way (`SplicePolicy`; a chunk gets its size line first, its CRLF after).
    private func spliceRequestBody(_ u: UpstreamConnection) {
        let facts = SplicePolicy.Facts(enabled: worker.limits.splice,
                                       plainBothSides: clientStream.isPlainTCP && u.stream.isPlainTCP,
                                       inputBuffered: clientStream.inputLength,
                                       inFraming: request.framing, out: requestOut)
        guard case .splice(let budget) = SplicePolicy.decide(facts, decoder: requestDecoder) else { return }
        _ = BodyPump.splice(from: clientStream, to: u.stream, budget: budget, out: requestOut,
                            moved: { [weak self] n in self?.requestSpliced(n) })
    }

    /// `n` request body bytes left the client's socket for the upstream's: counted, and the
    /// decoder moves past them; at a section's end the body completes or reads its next chunk line.
    private func requestSpliced(_ n: Int) {
        SplicePolicy.consumed(n, by: &requestDecoder)
        bytesIn += UInt64(n)
        worker.context.metrics.countSpliced(n)
        guard clientStream.spliceBudget == 0, let u = upstream else { return }
        BodyPump.spliceSectionEnded(from: clientStream, to: u.stream, out: requestOut)
        if requestDecoder.isComplete {
            metrics.requestSent = EventLoop.nowNanos()
            run(machine.requestBodyComplete())
        } else {
            pumpRequestBody()
        }
    }

    /// The response is whole and its upstream gone, the client's body still coming
    /// (`ExchangeMachine.judgeRestOfRequestBody`): the rest is decoded and dropped, so that a
    /// malformed body is logged as the client's error (`requestFailed`). A body that ends, a
    /// client that stops sending (its close), or `header_timeout` ends the exchange completed.
    func judgeRestOfRequestBody() {
        do throws(WireError) {
            let stop = try BodyPump.pump(clientStream, &requestDecoder) { n in
                clientStream.drainInput(n)
                bytesIn += UInt64(n)
                return true
            }
            if stop != .complete {
                if client.lifecycle.input == .halfClosed { run(machine.requestBodyCutOff()) }
                return
            }
        } catch {
            run(machine.requestBodyFailed()) { GatewayError(wire: error) }
            return
        }
        run(machine.requestBodyComplete())
    }

    /// The request body of a `validate_multipart` route: each payload slice is fed to the
    /// validator first, and only what it allows goes upstream; the last bytes (what may be the
    /// close delimiter) wait until it says the body is whole. A broken body is answered 400 and
    /// its upstream connection closed before its last byte went up.
    private func pumpMultipartBody(_ u: UpstreamConnection) {
        var failure: GatewayError?
        do throws(WireError) {
            let stop = try BodyPump.pump(clientStream, &requestDecoder) { n in
                clientStream.withInput(max: n) { bytes in
                    phaseState.multipartHeld.append(contentsOf: bytes)
                    if case .invalid(let e) = phaseState.multipart!.feed(bytes) { failure = refuseMultipart(e) }
                }
                clientStream.drainInput(n)
                bytesIn += UInt64(n)
                if failure == nil { forwardMultipart(u) }
                return failure == nil
            }
            if stop == .needMore {
                if client.lifecycle.input == .halfClosed { run(machine.requestBodyCutOff()) }
                else if u.pendingOutput >= ClientConnection.writeHighWatermark { run(machine.upstreamOutputFilled()) }
                return
            }
        } catch {
            failure = GatewayError(wire: error)
        }
        if failure == nil, case .invalid(let e) = phaseState.multipart!.finish() {
            failure = refuseMultipart(e)   // the body ended without its close delimiter
        }
        if let failure {
            run(machine.requestBodyFailed()) { failure }   // the upstream never got the body's last bytes
            return
        }
        forwardMultipart(u)   // complete: the rest goes
        if requestOut == .chunked { u.send(ChunkedEncoder.last) }
        metrics.requestSent = EventLoop.nowNanos()
        run(machine.requestBodyComplete())
    }

    /// The request body of a `throttle` route (AF's throttleBandwidth): at most `packet_bytes`
    /// of payload go up, then the client is not read for `delay`, then the next packet; the
    /// worker never blocks (a timer opens each packet).
    private func pumpThrottledBody(_ u: UpstreamConnection, _ t: RequestSerializationConfig.Throttle) {
        if phaseState.throttleTimer == nil { phaseState.throttleBudget = t.packetBytes }
        do throws(WireError) {
            while !requestDecoder.isComplete {
                if u.pendingOutput >= ClientConnection.writeHighWatermark {   // the upstream is slower still
                    run(machine.upstreamOutputFilled())
                    return
                }
                if phaseState.throttleBudget == 0 {
                    if phaseState.throttleTimer?.isScheduled == true { return }
                    clientStream.setReading(false)
                    let timer = phaseState.throttleTimer ?? Timer(loop: worker.loop) { [weak self] in
                        guard let self, self.isCurrent, !self.requestBodyDone else { return }
                        self.phaseState.throttleBudget = t.packetBytes
                        if !self.machine.isSuspended { self.clientStream.setReading(true) }
                        self.pumpRequestBody()
                    }
                    phaseState.throttleTimer = timer
                    timer.schedule(after: t.delay)
                    return
                }
                let chunked = requestOut == .chunked
                let stop = try BodyPump.pump(clientStream, &requestDecoder, limit: { phaseState.throttleBudget },
                                             end: { if chunked { u.send(ChunkedEncoder.last) } }) { n in
                    if chunked { u.send(ChunkedEncoder.chunkHeader(size: n)) }
                    clientStream.moveInput(n, to: u.stream)
                    if chunked { u.send(ChunkedEncoder.chunkTrailer) }
                    phaseState.throttleBudget -= n
                    bytesIn += UInt64(n)
                    return phaseState.throttleBudget > 0 && u.pendingOutput < ClientConnection.writeHighWatermark
                }
                if stop == .complete { break }
                if stop == .needMore {
                    if client.lifecycle.input == .halfClosed { run(machine.requestBodyCutOff()) }
                    return
                }
            }
        } catch {
            run(machine.requestBodyFailed()) { GatewayError(wire: error) }
            return
        }
        phaseState.throttleTimer?.cancel()
        metrics.requestSent = EventLoop.nowNanos()
        run(machine.requestBodyComplete())
    }

    /// Sends what the multipart validator allows of the held bytes.
    private func forwardMultipart(_ u: UpstreamConnection) {
        let allowed = phaseState.multipart!.forwardable - phaseState.multipartSent
        guard allowed > 0 else { return }
        let n = min(allowed, phaseState.multipartHeld.count)
        phaseState.multipartHeld.withUnsafeBytes { all in
            let slice = UnsafeRawBufferPointer(rebasing: all[0..<n])
            if requestOut == .chunked { u.send(ChunkedEncoder.chunkHeader(size: n)) }
            u.send(slice)
            if requestOut == .chunked { u.send(ChunkedEncoder.chunkTrailer) }
        }
        phaseState.multipartHeld.removeFirst(n)
        phaseState.multipartSent += n
    }

    /// The refusal of a broken multipart body, recorded as a request reject (with the bytes
    /// still held as its sample).
    private func refuseMultipart(_ e: MultipartError) -> GatewayError {
        requestRejection = RequestRejection(reason: e.reason, message: e.message,
                                               bodySample: Array(phaseState.multipartHeld.prefix(RequestRejection.sampleLimit)))
        return .multipartRefused(e)
    }

    func upstreamWritable(_ u: UpstreamConnection) {
        guard !requestBodyDone else { return }
        run(machine.upstreamOutputDrained())
        // Bytes already buffered do not fire the read callback again: pump them now.
        pumpRequestBody()
    }

    /// The upstream request filter refused the request (400 request-serialization-failed):
    /// nothing reached the upstream. `sample`: the first bytes of the refused body, for its
    /// `request.rejected` record.
    func refuseRequest(_ e: GatewayError, reason: String, message: String, sample: [UInt8]) {
        requestRejection = RequestRejection(reason: reason, message: message, bodySample: sample)
        respond(e)
    }

    /// Reads the client's body whole (bounded by `limits.body_bytes`) for a serializer that
    /// rebuilds it, then connects with the rebuilt body. Called again as more arrives.
    func collectRequestBody() {
        guard var body = collected else { return }
        collected = nil
        do throws(WireError) {
            var tooLarge = false
            let stop = try BodyPump.pump(clientStream, &requestDecoder) { n in
                guard body.count + n <= limits.bodyBytes else {
                    tooLarge = true
                    return false
                }
                clientStream.withInput(max: n) { body.append(contentsOf: $0) }
                clientStream.drainInput(n)
                bytesIn += UInt64(n)
                return true
            }
            if tooLarge {
                run(machine.requestBodyFailed()) {
                    GatewayError(.bodyTooLarge, status: 413, message: "request body exceeds the limit of \(self.limits.bodyBytes)",
                                 source: .client, mustClose: true)
                }
                return
            }
            if stop == .needMore {
                collected = body
                if client.lifecycle.input == .halfClosed {
                    run(machine.requestBodyCutOff())   // it will never be whole
                }
                return
            }
        } catch {
            run(machine.requestBodyFailed()) { GatewayError(wire: error) }
            return
        }
        run(machine.requestBodyBuffered())
        switch worker.phases.upstreamRequestBodyFilter(self, collected: body) {
        case .proceed:
            connectUpstream()
        case .refuse(let e, let reason, let message):
            refuseRequest(e, reason: reason, message: message, sample: Array(body.prefix(RequestRejection.sampleLimit)))
        }
    }
}
