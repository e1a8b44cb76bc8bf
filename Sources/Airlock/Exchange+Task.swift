import AirlockIO
import AirlockSession

/// The exchange as a task (`GET /tasks`, `/events`): its lifecycle events (suspended and
/// resumed are posted where `run` performs backpressure), an admin's cancel, and the route's
/// `request.timeout` (AFNetworking's `timeoutInterval`).
extension Exchange {
    /// Posts `kind` when someone listens for it (`GET /events`); otherwise costs one atomic load.
    @inline(__always)
    func post(_ kind: TaskEvent.Kind, status: Int = 0, reason: String? = nil) {
        guard let hub = worker.taskEvents, hub.wants(kind) else { return }
        hub.publish(event(kind, status: status, reason: reason))
    }

    /// `DELETE /tasks/{id}`: the client connection closes at once (no response, or the part
    /// already sent, cut short) and the upstream connection is dropped, never pooled. The
    /// access record says `cancelled`; the error record's reason is `cancelled` (status 499).
    func cancel() {
        run(machine.clientGone()) {
            GatewayError(.cancelled, status: 499, message: "cancelled by an admin (DELETE /tasks)", source: .internal)
        }
    }

    /// Starts the route's `request.timeout`: one deadline over the whole exchange, from
    /// dispatch through connect, sending, waiting and relay (a timer only on routes that set
    /// it; `end` cancels it however the exchange ends). It acts only while this is still its
    /// connection's exchange: never on a later request of the same keep-alive connection.
    func armDeadline(after timeout: Duration) {
        let timer = Timer(loop: worker.loop) { [weak self] in
            guard let self, self.isCurrent else { return }
            self.deadlinePassed(timeout)
        }
        deadline = timer
        timer.schedule(after: timeout)
    }

    /// 504 exchange-timeout while no response byte reached the client (the upstream connection
    /// is closed, never pooled); once the response is being relayed, the client connection is
    /// cut like an upstream failure mid-body. Either way `end` logs it once.
    private func deadlinePassed(_ timeout: Duration) {
        // Still reading the client's body: the client is the slow side.
        let source: GatewayError.Source = requestBodyDone ? .upstream : .client
        run(machine.deadlinePassed()) {
            machine.responseHeadSent
                ? GatewayError(.exchangeTimeout, status: responseStatus,
                               message: "the exchange did not end within request.timeout (\(timeout)): response cut off",
                               source: source)
                : GatewayError(.exchangeTimeout, status: ExchangeMachine.UpstreamFailure.timeout.status,
                               message: "the exchange did not end within request.timeout (\(timeout))", source: source)
        }
    }
}
