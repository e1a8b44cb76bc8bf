import AirlockConfig
import AirlockIO
import AirlockSession

/// `limits.max_connections_per_upstream` on this worker: its share of the cap per upstream,
/// requests beyond it waiting in a bounded FIFO (`UpstreamAdmission`, one per upstream key),
/// each with its own timer, and 503 upstream-busy when the queue is full or the wait too long.
///
/// A slot belongs to an exchange from admission until its new connection is attached, then to
/// that connection until it closes (`UpstreamConnection.holdsSlot`); an exchange that ends
/// still holding one gives it back (`exchangeEnded`). Waiters are resumed on a later turn of
/// the loop, never inside the close or park that freed their slot.
extension Worker {
    /// The queued exchange of a waiting client.
    struct QueuedExchange {
        weak var client: ClientConnection?
        weak var exchange: Exchange?
        let key: UpstreamKey
        let timer: Timer?
        var withSlot = false
    }

    /// This worker's share of `total` (the remainder goes to the first workers).
    static func share(of total: Int, worker index: Int, workers: Int) -> Int {
        total / workers + (index < total % workers ? 1 : 0)
    }

    /// A request found no idle pooled connection: a slot (`.connect`), a place in the queue
    /// (`.wait`; `client.connectUpstream` runs again when a slot or an idle connection is
    /// free), or `.busy`.
    func admit(_ ex: Exchange, client: ClientConnection) -> UpstreamAdmission.Decision {
        nextQueueTicket &+= 1
        let ticket = nextQueueTicket
        let decision = admissions[ex.key, default: UpstreamAdmission(limit: connectionShare, queueSize: queueShare)]
            .request(ticket)
        if decision == .wait {
            let key: UpstreamKey = ex.key
            let t = Timer(loop: loop) { [unowned self] in self.queueTimedOut(ticket, key: key) }
            t.schedule(after: limits.upstreamQueueTimeout)
            queued[ticket] = QueuedExchange(client: client, exchange: ex, key: key, timer: t)
            ex.queueTicket = ticket
        }
        return decision
    }

    /// A held slot is given up: it passes to the first waiter, or is freed.
    func releaseSlot(_ key: UpstreamKey) {
        guard let ticket = admissions[key]?.release() else { return }
        resumeLater(ticket, withSlot: true)
    }

    /// A connection to `key` was parked: the first waiter may take it.
    func offerIdle(_ key: UpstreamKey) {
        guard let ticket = admissions[key]?.idleAvailable() else { return }
        resumeLater(ticket, withSlot: false)
    }

    /// The exchange is over (answered, failed or abandoned): out of the queue, slot returned.
    func exchangeEnded(_ ex: Exchange) {
        if ex.queueTicket != 0 {
            let ticket = ex.queueTicket
            ex.queueTicket = 0
            if admissions[ex.key]?.cancel(ticket) == true { queued.removeValue(forKey: ticket)?.timer?.cancel() }
        }
        if ex.holdsSlot {
            ex.holdsSlot = false
            releaseSlot(ex.key)
        }
    }

    private func resumeLater(_ ticket: UInt64, withSlot: Bool) {
        guard var w = queued[ticket] else { return }
        w.timer?.cancel()
        w.withSlot = withSlot
        queued[ticket] = w
        loop.execute { [self] in self.resume(ticket) }
    }

    private func resume(_ ticket: UInt64) {
        guard let w = queued.removeValue(forKey: ticket) else { return }
        guard let client = w.client, let ex = w.exchange, client.exchange === ex, ex.queueTicket == ticket else {
            // The client left meanwhile: what it was given goes to the next waiter.
            if w.withSlot { releaseSlot(w.key) } else { offerIdle(w.key) }
            return
        }
        ex.queueTicket = 0
        ex.holdsSlot = w.withSlot
        ex.connectUpstream()
    }

    private func queueTimedOut(_ ticket: UInt64, key: UpstreamKey) {
        guard admissions[key]?.cancel(ticket) == true, let w = queued.removeValue(forKey: ticket) else { return }
        guard let client = w.client, let ex = w.exchange, client.exchange === ex else { return }
        ex.queueTicket = 0
        ex.failExchange(.upstreamBusy(ex.key, timedOut: true, limits: limits))
    }
}
