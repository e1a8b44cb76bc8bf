import AirlockIO
import AirlockSession
import Logging

/// The task phase: the exchange as `GET /tasks` and `/events` see it — lifecycle events
/// (suspended / resumed are posted where `run` performs backpressure) and an admin's cancel.
extension ClientConnection {
    /// Posts `kind` for `ex` when someone listens for it (`GET /events`); otherwise costs one atomic load.
    @inline(__always)
    func post(_ kind: TaskEvent.Kind, _ ex: Exchange, status: Int = 0, reason: String? = nil) {
        guard let hub = worker.taskEvents, hub.wants(kind) else { return }
        hub.publish(ex.event(kind, status: status, reason: reason))
    }

    /// `DELETE /tasks/{id}`: the client connection closes at once (no response, or the part
    /// already sent, cut short) and the upstream connection is dropped, never pooled. The
    /// access record says `cancelled`; the error record's reason is `cancelled` (status 499).
    func cancelTask() {
        guard let ex = exchange else { return }
        run(ex.machine.clientGone(), ex) {
            GatewayError(.cancelled, status: 499, message: "cancelled by an admin (DELETE /tasks)", source: .internal)
        }
    }
}

