import AirlockIO
import AirlockSession

/// A route's `request.timeout` (AFNetworking's `timeoutInterval`): one deadline over the whole
/// exchange, from dispatch through connect, sending, waiting and relay. A timer exists only on
/// routes that set it, one per exchange; `endExchange` cancels it however the exchange ends.
extension ClientConnection {
    /// Starts the exchange's deadline. The timer acts only while `ex` is still this
    /// connection's exchange: never on a later request of the same keep-alive connection.
    func armDeadline(_ ex: Exchange, after timeout: Duration) {
        let timer = Timer(loop: worker.loop) { [weak self, weak ex] in
            guard let self, let ex, self.exchange === ex else { return }
            self.deadlinePassed(ex, timeout)
        }
        ex.deadline = timer
        timer.schedule(after: timeout)
    }

    /// 504 exchange-timeout while no response byte reached the client (the upstream connection
    /// is closed, never pooled); once the response is being relayed, the client connection is
    /// cut like an upstream failure mid-body. Either way `endExchange` logs it once.
    private func deadlinePassed(_ ex: Exchange, _ timeout: Duration) {
        // Still reading the client's body: the client is the slow side.
        let source: GatewayError.Source = ex.requestBodyDone ? .upstream : .client
        run(ex.machine.deadlinePassed(), ex) {
            ex.machine.responseHeadSent
                ? GatewayError(.exchangeTimeout, status: ex.responseStatus,
                               message: "the exchange did not end within request.timeout (\(timeout)): response cut off",
                               source: source)
                : GatewayError(.exchangeTimeout, status: ExchangeMachine.UpstreamFailure.timeout.status,
                               message: "the exchange did not end within request.timeout (\(timeout))", source: source)
        }
    }
}
