import AirlockConfig
import AirlockSerialization
import CoreMetrics
import AirlockIO
import AirlockSecurity
import AirlockSession
import Logging
import AirlockWire

/// Phases before any byte goes upstream: request filter (limits, loops, routes), the
/// upstream request filter (the route's request serializer, a body read whole for it), the
/// upstream peer; then `connectUpstream` (`ClientConnection+Upstream`).
extension ClientConnection {
    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// A parsed request head, through the phases before any byte goes upstream: request
    /// filter, (request serializer: today `ForwardingHeads`' canonical re-encoding, in
    /// `sendRequestHead`), upstream peer; then the connection to it.
    func dispatch(_ req: RequestHead) {
        var id = worker.nextRequestID()
        id.client = RequestIDField.clientID(in: req.headers)
        let phases = worker.phases
        if let e = phases.requestFilter(req) {
            respondError(e, exchange: nil, requestID: id, request: req)
            return
        }
        if req.method == .connect {
            if interception != nil {
                respondError(GatewayError(.connectInsideIntercept, status: 400,
                                          message: "a CONNECT inside an intercepted tunnel is not allowed",
                                          source: .client, mustClose: true),
                             exchange: nil, requestID: id, request: req)
                return
            }
            dispatchConnect(req, id: id)
            return
        }
        let peer: UpstreamPeer
        switch interception.map({ phases.interceptedPeer(req, $0) }) ?? phases.upstreamPeer(req) {
        case .success(let p): peer = p
        case .failure(let e):
            respondError(e, exchange: nil, requestID: id, request: req)
            return
        }
        let route = peer.route
        let ex = Exchange(id: id, request: req, route: route, key: peer.key, limits: worker.wireLimits)
        worker.context.metrics.inFlight.increment()
        ex.inFlight = true
        exchange = ex
        lifecycle.dispatched()
        if let timeout = route.exchangeTimeout { armDeadline(ex, after: timeout) }
        if req.framing == .chunked && stream.inputLength > 0 {
            // Body bytes that came with the head are checked before an upstream is chosen: a
            // chunked body already broken gets its 400 with no upstream connection at all.
            do throws(WireError) {
                try stream.withInput(max: stream.inputLength) { buf throws(WireError) in try ex.requestDecoder.precheck(buf) }
            } catch {
                run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
                return
            }
        }
        if route.requestSerializer != nil {
            // The upstream request filter (the route's request serializer), before any
            // upstream is chosen.
            switch phases.upstreamRequestFilter(ex) {
            case .proceed:
                break
            case .refuse(let e, let reason, let message):
                refuseRequest(ex, e, reason: reason, message: message, sample: bufferedBodySample(req.framing))
                return
            }
        }
        if let h = route.health, h.isUnreachable {
            switch h.admit() {
            case .failFast:
                failExchange(Self.unreachable(h, retryAfter: worker.context.config.reachability.retryAfterSeconds))
                return
            case .trial: ex.reachabilityTrial = true
            case .proceed: break
            }
        }
        if req.expectsContinue && req.version == .http11 && !ex.requestBodyDone {
            // We take the body ourselves (and stream it); the upstream never sees Expect.
            stream.write(Self.continueResponse)
        }
        post(.resumed, ex)
        if ex.collected != nil {
            collectRequestBody(ex)   // connects once the body is whole and rebuilt
            return
        }
        // Hold the client's body until the upstream is ready for it.
        connectUpstream(ex)
    }

    /// The upstream request filter refused the request (400 request-serialization-failed):
    /// nothing reached the upstream. `sample`: the first bytes of the refused body, for its
    /// `request.rejected` record.
    func refuseRequest(_ ex: Exchange, _ e: GatewayError, reason: String, message: String, sample: [UInt8]) {
        ex.requestRejection = RequestRejection(reason: reason, message: message, bodySample: sample)
        respondError(e, exchange: ex, requestID: ex.id)
    }

    /// Reads the client's body whole (bounded by `limits.body_bytes`) for a serializer that
    /// rebuilds it, then connects with the rebuilt body. Called again as more arrives.
    func collectRequestBody(_ ex: Exchange) {
        guard var body = ex.collected else { return }
        ex.collected = nil
        do throws(WireError) {
            var tooLarge = false
            let stop = try BodyPump.pump(stream, &ex.requestDecoder) { n in
                guard body.count + n <= limits.bodyBytes else {
                    tooLarge = true
                    return false
                }
                stream.withInput(max: n) { body.append(contentsOf: $0) }
                stream.drainInput(n)
                ex.bytesIn += UInt64(n)
                return true
            }
            if tooLarge {
                run(ex.machine.requestBodyFailed(), ex) {
                    GatewayError(.bodyTooLarge, status: 413, message: "request body exceeds the limit of \(self.limits.bodyBytes)",
                                 source: .client, mustClose: true)
                }
                return
            }
            if stop == .needMore {
                ex.collected = body
                if lifecycle.input == .halfClosed {
                    run(ex.machine.requestBodyCutOff(), ex)   // it will never be whole
                }
                return
            }
        } catch {
            run(ex.machine.requestBodyFailed(), ex) { GatewayError(wire: error) }
            return
        }
        run(ex.machine.requestBodyBuffered(), ex)
        switch worker.phases.upstreamRequestBodyFilter(ex, collected: body) {
        case .proceed:
            connectUpstream(ex)
        case .refuse(let e, let reason, let message):
            refuseRequest(ex, e, reason: reason, message: message, sample: Array(body.prefix(RequestRejection.sampleLimit)))
        }
    }


    /// The first bytes of the request body already buffered behind the head, at most
    /// `RequestRejection.sampleLimit` (a chunked body's sample includes its chunk framing).
    private func bufferedBodySample(_ framing: BodyFraming) -> [UInt8] {
        var limit = RequestRejection.sampleLimit
        switch framing {
        case .none: return []
        case .length(let n): limit = Int(min(n, UInt64(limit)))
        case .chunked, .closeDelimited: break
        }
        return stream.withInput(max: min(limit, stream.inputLength)) { Array($0) }
    }
}
