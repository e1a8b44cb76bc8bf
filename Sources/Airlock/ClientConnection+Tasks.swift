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

