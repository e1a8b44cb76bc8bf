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
/// upstream peer; then a new `Exchange` runs the rest (`Exchange+Upstream` first).
extension ClientConnection {
    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// A parsed request head, through the phases before any byte goes upstream: request
    /// filter, upstream peer, upstream request filter; then its exchange connects.
    func dispatch(_ req: RequestHead) {
        var id = worker.nextRequestID()
        id.client = RequestIDField.clientID(in: req.headers)
        // The exchange's context exists before its first phase: a request refused by any phase
        // is answered and logged from it like every other.
        let ex = Exchange(client: self, id: id, request: req, limits: worker.wireLimits)
        let phases = worker.phases
        if let e = phases.requestFilter(req) {
            ex.respond(e)
            return
        }
        if req.method == .connect {
            if isIntercepted {
                ex.respond(GatewayError(.connectInsideIntercept, status: 400,
                                        message: "a CONNECT inside an intercepted tunnel is not allowed",
                                        source: .client, mustClose: true))
                return
            }
            dispatchConnect(ex)
            return
        }
        switch interception.map({ phases.interceptedPeer(req, $0) }) ?? phases.upstreamPeer(req) {
        case .success(let peer): ex.routed(peer)
        case .failure(let e):
            ex.respond(e)
            return
        }
        let route: Route = ex.routeRef
        worker.context.metrics.inFlight.increment()
        ex.inFlight = true
        exchange = ex
        lifecycle.dispatched()
        if let timeout = route.exchangeTimeout { ex.armDeadline(after: timeout) }
        if req.framing == .chunked && stream.inputLength > 0 {
            // Body bytes that came with the head are checked before an upstream is chosen: a
            // chunked body already broken gets its 400 with no upstream connection at all.
            do throws(WireError) {
                try stream.withInput(max: stream.inputLength) { buf throws(WireError) in try ex.requestDecoder.precheck(buf) }
            } catch {
                ex.run(ex.machine.requestBodyFailed()) { GatewayError(wire: error) }
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
                ex.refuseRequest(e, reason: reason, message: message, sample: bufferedBodySample(req.framing))
                return
            }
        }
        if let h = route.health, h.isUnreachable {
            switch h.admit() {
            case .failFast:
                ex.failExchange(.unreachable(h, retryAfter: worker.context.config.reachability.retryAfterSeconds))
                return
            case .trial: ex.reachabilityTrial = true
            case .proceed: break
            }
        }
        // The cache lookup (`routes[].cache`): answered from memory, or waiting for another
        // request's fill of the same key, or on to the upstream.
        if route.config.cache != nil, ex.cacheLookup() { return }
        if req.expectsContinue && req.version == .http11 && !ex.requestBodyDone {
            // We take the body ourselves (and stream it); the upstream never sees Expect.
            stream.write(Self.continueResponse)
        }
        ex.post(.resumed)
        if ex.collected != nil {
            ex.collectRequestBody()   // connects once the body is whole and rebuilt
            return
        }
        // Hold the client's body until the upstream is ready for it.
        ex.connectUpstream()
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
