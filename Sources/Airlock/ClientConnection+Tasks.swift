import AirlockIO
import AirlockSession
import Logging

/// The task phase: the exchange as `GET /tasks` and `/events` see it — lifecycle events,
/// backpressure (suspended / resumed) and an admin's cancel.
extension ClientConnection {
    /// Posts `kind` for `ex` when someone listens (`GET /events`); otherwise costs one atomic load.
    @inline(__always)
    func post(_ kind: TaskEvent.Kind, _ ex: Exchange, status: Int = 0, reason: String? = nil) {
        guard let hub = worker.taskEvents, hub.hasSubscribers else { return }
        hub.publish(ex.event(kind, status: status, reason: reason))
    }

    /// Backpressure holds the exchange (either side stopped reading) or lets it go.
    func setSuspended(_ ex: Exchange, _ suspended: Bool) {
        guard ex.suspended != suspended else { return }
        ex.suspended = suspended
        post(suspended ? .suspended : .resumed, ex)
    }

    /// The exchange's end, from the logging phase (once per exchange): its last event.
    func postEnd(_ ex: Exchange, status: Int) {
        ex.metrics.responseEnd = EventLoop.nowNanos()
        post(ex.outcome, ex, status: status, reason: ex.failure)
    }

    /// `DELETE /tasks/{id}`: the client connection closes at once (no response, or the part
    /// already sent, cut short) and the upstream connection is dropped, never pooled. The
    /// access record says `cancelled`; the error record's reason is `cancelled` (status 499).
    func cancelTask() {
        guard let ex = exchange else { return }
        _ = ex.machine.clientGone()
        ex.outcome = .cancelled
        ex.failure = GatewayError.Code.cancelled.rawValue
        if let u = ex.upstream { ex.upstream = nil; u.close() }
        logError(GatewayError(.cancelled, status: 499, message: "cancelled by an admin (DELETE /tasks)", source: .internal), ex)
        logAccess(ex, status: ex.responseHeadSent ? ex.responseStatus : 499, complete: false)
        exchange = nil
        close()
    }
}

extension ClientConnection {
    /// The access record's task fields: `timings` (milliseconds: dns, connect, tls,
    /// request_sent, ttfb, total; a phase that did not happen is left out), `reused` (the
    /// upstream connection came from the pool; absent when none was used) and `state`.
    func addTaskFields(_ ex: Exchange, to md: inout Logger.Metadata) {
        var timings: Logger.Metadata = [:]
        for (name, millis) in ex.metrics.phases { timings[name] = .stringConvertible(millis) }
        md["timings"] = .dictionary(timings)
        if ex.metrics.requestSent != 0 { md["reused"] = .stringConvertible(ex.metrics.reused) }
        md["state"] = .string(ex.taskState.rawValue)
    }
}
