/// One worker's admission to one upstream under `limits.max_connections_per_upstream`
/// (AFNetworking's `HTTPMaximumConnectionsPerHost`): at most `limit` connections open
/// (connecting, serving or idle in the pool); requests beyond it wait in a FIFO of at most
/// `queueSize`, and beyond that are refused (503 upstream-busy). Pure bookkeeping: waiters are
/// opaque ids; the caller owns their timers and connections.
///
/// A slot is held from `request` returning `.connect` until `release`; a released slot goes
/// straight to the first waiter (so `open` never exceeds `limit`, and a freed slot cannot be
/// taken by a newcomer ahead of those who waited).
public struct UpstreamAdmission: Sendable, Equatable {
    public let limit: Int
    public let queueSize: Int
    /// Slots held (connections open or being opened).
    public private(set) var open = 0
    private var queue: [UInt64] = []

    public enum Decision: Sendable, Equatable {
        case connect   // a slot is now held by the caller
        case wait      // queued; `release` or `idleAvailable` will name this waiter
        case busy      // the queue is full: refuse
    }

    public init(limit: Int, queueSize: Int) {
        precondition(limit > 0 && queueSize >= 0)
        self.limit = limit
        self.queueSize = queueSize
    }

    public var waiting: Int { queue.count }

    /// A request that found no idle pooled connection asks for a slot.
    public mutating func request(_ waiter: UInt64) -> Decision {
        if open < limit {
            open += 1
            return .connect
        }
        guard queue.count < queueSize else { return .busy }
        queue.append(waiter)
        return .wait
    }

    /// A held slot is given up (its connection closed, or it was never used): the first
    /// waiter now holds it (returned), else the count goes down.
    public mutating func release() -> UInt64? {
        precondition(open > 0, "release without a held slot")
        if !queue.isEmpty { return queue.removeFirst() }
        open -= 1
        return nil
    }

    /// A connection was parked idle: the first waiter (returned) may take it; no slot changes hands.
    public mutating func idleAvailable() -> UInt64? {
        queue.isEmpty ? nil : queue.removeFirst()
    }

    /// A waiter gives up (timed out, or its client left). False when it was no longer queued
    /// (it had been handed a slot or a connection already).
    public mutating func cancel(_ waiter: UInt64) -> Bool {
        guard let i = queue.firstIndex(of: waiter) else { return false }
        queue.remove(at: i)
        return true
    }
}
