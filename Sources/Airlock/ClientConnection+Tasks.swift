import AirlockIO
import AirlockSession
import Logging

/// The task phase: the exchange as `GET /tasks` and `/events` see it — lifecycle events,
/// backpressure (suspended / resumed) and an admin's cancel.
extension ClientConnection {
    /// Posts `kind` for `ex` when someone listens for it (`GET /events`); otherwise costs one atomic load.
    @inline(__always)
    func post(_ kind: TaskEvent.Kind, _ ex: Exchange, status: Int = 0, reason: String? = nil) {
        guard let hub = worker.taskEvents, hub.wants(kind) else { return }
        hub.publish(ex.event(kind, status: status, reason: reason))
    }

    /// Performs a backpressure action of the machine (le-proxy's pattern: a side stops reading
    /// while its partner's output is full) and posts `suspended` / `resumed` when the task's
    /// suspension changes. `wasSuspended`: the machine's `isSuspended` before the event.
    func performFlow(_ action: ExchangeMachine.Action, _ ex: Exchange, wasSuspended: Bool) {
        switch action {
        case .pauseClientReads:
            stream.setReading(false)   // resumed when the upstream's output drains (upstreamWritable)
        case .resumeClientReads:
            stream.setReading(true)
        case .pauseUpstreamReads:
            ex.upstream?.setReading(false)   // resumed when the client's output drains (streamWritable)
            stream.setWriteLowWatermark(Self.writeHighWatermark / 2)
        case .resumeUpstreamReads:
            ex.upstream?.setReading(true)
        default:
            return
        }
        if ex.machine.isSuspended != wasSuspended { post(wasSuspended ? .resumed : .suspended, ex) }
    }

    /// `DELETE /tasks/{id}`: the client connection closes at once (no response, or the part
    /// already sent, cut short) and the upstream connection is dropped, never pooled. The
    /// access record says `cancelled`; the error record's reason is `cancelled` (status 499).
    func cancelTask() {
        guard let ex = exchange else { return }
        _ = ex.machine.clientGone()
        endExchange(ex, .aborted(GatewayError(.cancelled, status: 499, message: "cancelled by an admin (DELETE /tasks)",
                                              source: .internal)))
    }
}

