import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire
import Logging

/// The logging phase of a CONNECT tunnel.
extension GatewayPhases {
    /// Every record and counter of one tunnel, in this order: the error record (when Airlock
    /// answered instead of opening it), metrics, the access record (`"tunnel"`: how it ended;
    /// `bytes_in`: client → upstream, `bytes_out`: upstream → client). Once per tunnel
    /// (`TunnelMachine.claimLogging`).
    func logging(tunnel t: Tunnel, _ end: TunnelEnd) {
        guard t.machine.claimLogging() else { return }
        let summary = RequestSummary(id: t.id, request: t.request, client: t.client.peer)
        let status = t.answer?.status ?? 200
        if let e = t.answer {
            logError(e, nil, summary, route: t.route.config.name, target: t.peer.target)
            context.metrics.gatewayError(route: t.route.config.name, error: e.reason)
        }
        if let why = t.failure, end == .clientError || end == .upstreamError {
            // After the 200 there is no answer to give: the record says what broke.
            context.logger.warning("tunnel.error", metadata: [
                "request_id": .string(t.id.description), "client": .string(t.client.peer.description),
                "route": .string(t.route.config.name), "target": .string(t.peer.target),
                "end": .string(end.rawValue), "reason": .string(why),
                "bytes_in": .stringConvertible(t.bytesUp), "bytes_out": .stringConvertible(t.bytesDown),
            ])
        }
        context.metrics.tunnelEnded(route: t.route.metrics, name: t.route.config.name, end: end,
                                           bytesUp: t.bytesUp, bytesDown: t.bytesDown)
        guard context.logsAccess else { return }
        var record = AccessRecord(
            requestID: t.id, status: status, bytesIn: t.bytesUp, bytesOut: t.bytesDown,
            durationMillis: (t.durationMillis * 1000).rounded() / 1000, client: t.client.peer,
            request: ("CONNECT", t.peer.target, t.request.host), route: t.route.config.name,
            upstream: t.machine.wasEstablished ? t.upstreamAddress : nil,
            incomplete: end == .clientError || end == .upstreamError || end == .drainTimeout || end == .cancelled,
            upstreamTiming: nil, task: nil)
        record.tunnel = end.rawValue
        writeAccess(record)
    }
}
