import AirlockConfig
import AirlockSerialization
import AirlockIO
import AirlockSerialization
import AirlockSession
import AirlockWire

/// The response side: the head read and started, the body relayed to the client with
/// backpressure, the upstream's end mid-body, and the one place the upstream connection is
/// released (`releaseUpstream`).
extension Exchange {
    /// The client drained what was queued for it: the validated body's next slices go, or
    /// the upstream may send more.
    func clientWritable() {
        if machine.validation == .delivering {
            if !machine.judgingRestOfRequestBody { continueDelivery() }   // delivered already
            return
        }
        guard upstream != nil, clientStream.outputLength < ClientConnection.writeHighWatermark / 2 else { return }
        run(machine.clientOutputDrained())
        pumpResponseBody()
    }

    func upstreamReadable(_ u: UpstreamConnection) {
        guard client.phase == .forwarding, upstream === u else { return }
        if u.stream.inputLength > 0 {
            run(machine.upstreamBytesArrived())
            if metrics.firstResponseByte == 0 { metrics.firstResponseByte = EventLoop.nowNanos() }
        }
        if machine.awaitingUpstreamHead {
            readResponseHead(u)
        } else {
            pumpResponseBody()
        }
    }

    private func readResponseHead(_ u: UpstreamConnection) {
        while machine.awaitingUpstreamHead {
            let n: Int?
            do {
                n = try u.stream.withInput(max: responseScanner.window) { buf throws(WireError) in
                    try responseScanner.scan(buf)
                }
            } catch {
                upstreamMalformed(u, error)
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
            responseScanner.reset()
            let head: ResponseHead
            switch parsed {
            case .success(let h): head = h
            case .failure(let e):
                upstreamMalformed(u, e)
                return
            }
            if machine.isResuming {
                resumedHeadArrived(head)
                continue
            }
            if head.status >= 200 {   // interim heads (100, 103) are ours to absorb
                startResponse(head)
                if cache.active, cacheResponseStarted(head) { return }   // a 304 freshened the stored response
            }
            run(machine.responseHeadReceived(status: head.status, validates: route.validator != nil)) {
                GatewayError(.upstreamMalformed, status: ExchangeMachine.UpstreamFailure.malformed.status,
                             message: "101 Switching Protocols without an Upgrade request", source: .upstream)
            }
        }
    }

    /// A final head arrived: what the relay needs of it, before the machine decides what to do.
    private func startResponse(_ head: ResponseHead) {
        if reachabilityTrial {
            // The trial was answered: the circuit closes (a pooled connection never reported
            // a connect).
            reachabilityTrial = false
            reportReachability(.connected)
        }
        response = head
        responseStatus = head.status
        responseStartedAt = EventLoop.nowNanos()
        let framing = head.framing(requestMethod: request.method)
        responseFraming = framing
        responseDecoder = BodyDecoder(framing: framing)
        responseOut = ForwardingHeads.responseFraming(framing, clientVersion: request.version)
        clientKeepAlive = machine.clientKeepAlive(requestKeepAlive: request.keepAlive, clientContinues: client.clientContinues,
                                                        closeDelimited: responseOut == .close)
    }

    /// The one place a relayed response head is written (streamed, or after validation with
    /// the framing of the buffered body): re-encoded from the parsed head, never copied.
    func writeResponseHead(framing: BodyFraming? = nil) {
        guard let head = response else { return }
        worker.headWriter.reset()
        ForwardingHeads.response(head, framing: framing ?? head.framing(requestMethod: request.method),
                                 out: responseOut, requestMethod: request.method,
                                 keepAlive: clientKeepAlive, clientVersion: request.version,
                                 viaToken: worker.context.viaToken, viaToken11: worker.context.via11,
                                 idSerial: id.serial, clientID: id.client, idPrefix: worker.idPrefix, into: &worker.headWriter) { w in
            // A cached route's responses say what the cache did (RFC 9211).
            if let status = cache.status { status.write(into: &w) }
        }
        worker.headWriter.withBytes { clientStream.write($0) }
    }

    func pumpResponseBody(bounded: Bool = true) {
        guard client.phase == .forwarding, isCurrent, let u = upstream, !machine.awaitingUpstreamHead else { return }
        if machine.response == .validating {
            pumpValidatedBody()
            return
        }
        do throws(WireError) {
            try BodyPump.relay(from: u.stream, to: clientStream, decoder: &responseDecoder, out: responseOut,
                          bounded: bounded, highWatermark: ClientConnection.writeHighWatermark, sample: validation,
                               tee: cache.active ? self : nil) { n in
                bytesOut += UInt64(n)
            }
        } catch {
            upstreamMalformed(u, error)
            return
        }
        if responseDecoder.isComplete {
            responseDelivered()
        } else if clientStream.outputLength >= ClientConnection.writeHighWatermark {
            run(machine.clientOutputFilled())
        } else if !u.stream.isSplicing {
            spliceResponseBody(u)
        }
    }

    /// Before the response: whether its body will likely be spliced (nothing on the route needs
    /// the bytes, both sides plain), so the upstream reads once per event and little of the body
    /// is copied before the splice starts (`Stream.spliceExpected`).
    func expectSplice(_ u: UpstreamConnection) {
        u.stream.spliceExpected = worker.limits.splice && route.validator == nil && !cache.active
            && u.stream.isPlainTCP && clientStream.isPlainTCP
    }

    /// What splicing the response body depends on: whether anything needs its bytes.
    var responseSpliceFacts: SplicePolicy.Facts {
        SplicePolicy.Facts(enabled: worker.limits.splice,
                           plainBothSides: upstream?.stream.isPlainTCP == true && clientStream.isPlainTCP,
                           inputBuffered: upstream?.stream.inputLength ?? 0,
                           validating: machine.response == .validating,
                           sampling: (validation?.sampleRoom ?? 0) > 0, teeing: cache.teeing,
                           inFraming: responseFraming, out: responseOut)
    }

    /// The rest of the payload section the decoder is in goes socket to socket when nothing
    /// needs its bytes (`SplicePolicy`): a chunk gets its size line first, its CRLF after.
    private func spliceResponseBody(_ u: UpstreamConnection) {
        guard case .splice(let budget) = SplicePolicy.decide(responseSpliceFacts, decoder: responseDecoder) else { return }
        guard BodyPump.splice(from: u.stream, to: clientStream, budget: budget, out: responseOut,
                              moved: { [weak self] n in self?.responseSpliced(n) }) else { return }
    }

    /// `n` payload bytes left the upstream socket for the client's (through the pipe): counted
    /// as relayed, and the decoder moves past them.
    private func responseSpliced(_ n: Int) {
        SplicePolicy.consumed(n, by: &responseDecoder)
        bytesOut += UInt64(n)
        worker.context.metrics.countSpliced(n)
        run(machine.upstreamBytesArrived())
        if metrics.firstResponseByte == 0 { metrics.firstResponseByte = EventLoop.nowNanos() }
        guard let u = upstream, u.stream.spliceBudget == 0 else { return }
        BodyPump.spliceSectionEnded(from: u.stream, to: clientStream, out: responseOut)
        if responseDecoder.isComplete {
            responseDelivered()
        } else {
            pumpResponseBody()   // the next chunk line, read the ordinary way
        }
    }

    /// The upstream closed, errored or went silent after the response head.
    func upstreamEndedDuringBody(_ u: UpstreamConnection, event: StreamEvent) {
        // Read for the route's validator (`validating`), or relayed as it comes.
        let validating = machine.response == .validating
        let timeout = event == .readTimeout || event == .writeTimeout
        var cause = "upstream \(timeout ? "timed out" : "failed") mid-body"
        if event == .eof {
            // Bytes may still be buffered: take them all before judging the end.
            if validating { pumpValidatedBody() } else { pumpResponseBody(bounded: false) }
            guard isCurrent, !validating || machine.response == .validating else { return }   // the body was whole after all
        }
        dropUpstream()
        if event == .eof {
            do throws(WireError) {
                try responseDecoder.finishOnEOF()   // a close-delimited body ends here
                if validating {
                    run(machine.responseBodyEnded())
                } else {
                    if responseOut == .chunked { clientStream.write(ChunkedEncoder.last) }
                    responseDelivered()
                }
                return
            } catch {
                cause = "upstream closed mid-body: \(error.detail)"
            }
        }
        let failure: ExchangeMachine.UpstreamFailure = timeout ? .timeout : .closed
        if !validating || machine.validation == .buffering {
            // What arrived has gone out: the rest is asked for (`resume:`), or the connection is
            // cut without finishing the framing, so the client sees an incomplete response.
            cutMidBody(failure, cause: cause)
            return
        }
        // Nothing reached the client yet: the failure's status.
        run(machine.upstreamFailed(failure)) {
            GatewayError(timeout ? .upstreamTimeout : .upstreamClosed, status: failure.status, message: cause, source: .upstream)
        }
    }

    /// A response that is not HTTP/1.1: the upstream connection is never reused.
    func upstreamMalformed(_ u: UpstreamConnection, _ error: WireError) {
        dropUpstream()
        run(machine.upstreamFailed(.malformed)) { GatewayError(upstreamWire: error) }
    }

    // MARK: completion

    /// The upstream's part is over: the machine decides whether the connection goes back to
    /// the pool (the one place reuse is decided; `ExchangeMachine.reuseDecision`).
    func releaseUpstream(bodyReadToEnd: Bool) {
        guard let u = upstream else { return }
        upstream = nil
        let keepAlive = resumption?.upstreamKeepAlive ?? response?.keepAlive ?? false
        let decision = machine.reuseDecision(upstreamKeepAlive: keepAlive, bodyReadToEnd: bodyReadToEnd,
                                                buffersEmpty: u.buffersEmpty)
        switch decision {
        case .park:
            u.stream.stopSplice()   // spent already: a pooled connection reads the ordinary way
            worker.park(u)
            client.lastUpstream = u
        case .close:
            u.close()
        }
    }

    func clientAborted(_ event: StreamEvent) {
        run(machine.clientGone()) { .clientAborted(event) }
    }
}
