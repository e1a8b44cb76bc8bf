import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire
import Logging

/// The phases of an intercepted CONNECT (`connect: intercept`): where each request inside the
/// TLS session goes, and the record of the handshake itself.
extension GatewayPhases {
    // MARK: upstream peer, inside an intercepted tunnel

    /// Every request inside goes to the CONNECT's upstream under the CONNECT's route; it must
    /// name the intercepted authority (`Host`, or an absolute-form https target), or it gets
    /// 421 misdirected-request: a tunnel opened for one host never reaches another.
    func interceptedPeer(_ req: RequestHead, _ i: Interception) -> Result<UpstreamPeer, GatewayError> {
        var sameScheme = true
        if case .absolute(let scheme, _, _, _) = req.target { sameScheme = scheme == .https }
        guard sameScheme, i.admits(host: req.host, port: req.port) else {
            let named = req.port.map { "\(req.host):\($0)" } ?? req.host
            var e = GatewayError(.misdirectedRequest, status: 421,
                                 message: "this TLS session was opened for \(i.host):\(i.port) (CONNECT); "
                                     + "the request names \(named)", source: .client)
            e.extra = [("host", .string(named))]
            return .failure(e)
        }
        return .success(UpstreamPeer(route: i.peer.route, key: i.key))
    }

    // MARK: logging, the handshake and the session

    /// An intercepted CONNECT's handshake ended: `airlock_intercepts_total{route, result}`,
    /// and when it failed a `connect.tls-failed` warning with OpenSSL's reason and the access
    /// record (`"tunnel": "tls-failed"`). A session that began has its access record written
    /// when it ends (`logging(interceptedSession:)`). The requests inside get their own
    /// records, as any request.
    func logging(interception h: InterceptHandshake, serverName: String?, failure: String?, client: SocketAddress) {
        let route = h.peer.route
        let result = failure == nil ? "intercepted" : "tls-failed"
        context.metrics.interceptEnded(route: route.config.name, result: result)
        guard let failure else { return }
        var md: Logger.Metadata = [
            "request_id": .string(h.id.description),
            "client": .string(client.description),
            "route": .string(route.config.name),
            "target": .string(h.peer.target),
            "reason": .string(failure),
        ]
        if let serverName { md["server_name"] = .string(serverName) }
        context.logger.warning("connect.tls-failed", metadata: md)
        writeInterceptAccess(h, tunnel: result, bytesIn: 0, bytesOut: 0, client: client)
    }

    /// The access record of an intercepted session, when its client connection ended
    /// (`"tunnel": "intercepted"`): the TLS bytes over the client connection each way and the
    /// time since the `200`, for the whole session.
    func logging(interceptedSession i: Interception, bytesIn: UInt64, bytesOut: UInt64, client: SocketAddress) {
        writeInterceptAccess(i.handshake, tunnel: "intercepted", bytesIn: bytesIn, bytesOut: bytesOut, client: client)
    }

    private func writeInterceptAccess(_ h: InterceptHandshake, tunnel: String, bytesIn: UInt64, bytesOut: UInt64,
                                      client: SocketAddress) {
        guard context.logsAccess else { return }
        let millis = Double(EventLoop.nowNanos() &- h.started) / 1_000_000
        var record = AccessRecord(
            requestID: h.id, status: 200, bytesIn: bytesIn, bytesOut: bytesOut,
            durationMillis: (millis * 1000).rounded() / 1000, client: client,
            request: ("CONNECT", h.peer.target, h.request.host), route: h.peer.route.config.name,
            upstream: nil, incomplete: tunnel != "intercepted", upstreamTiming: nil, task: nil)
        record.tunnel = tunnel
        writeAccess(record)
    }
}
