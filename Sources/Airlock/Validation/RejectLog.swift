import Synchronization

/// The last `capacity` reject records, shared by every worker (which append) and the admin
/// listener (which reads). A fixed ring under a mutex: appending never allocates once full.
final class RejectLog: Sendable {
    let capacity: Int
    private let ring: Mutex<Ring>

    private struct Ring {
        var items: [RejectRecord] = []
        /// Where the next record goes once `items` is full (the oldest record).
        var next = 0
    }

    init(capacity: Int) {
        self.capacity = max(0, capacity)
        var ring = Ring()
        ring.items.reserveCapacity(min(self.capacity, 4096))
        self.ring = Mutex(ring)
    }

    func append(_ record: RejectRecord) {
        guard capacity > 0 else { return }
        ring.withLock { r in
            if r.items.count < capacity {
                r.items.append(record)
            } else {
                r.items[r.next] = record
                r.next = (r.next + 1) % capacity
            }
        }
    }

    /// Oldest first; only records at or after `sinceUnixMillis`, on `route` and of `side`, when given.
    func records(sinceUnixMillis: Int64? = nil, route: String? = nil, side: RejectRecord.Side? = nil) -> [RejectRecord] {
        let all: [RejectRecord] = ring.withLock { r in
            Array(r.items[r.next...]) + Array(r.items[..<r.next])
        }
        return all.filter { record in
            if let sinceUnixMillis, record.unixMillis < sinceUnixMillis { return false }
            if let route, record.route != route { return false }
            if let side, record.side != side { return false }
            return true
        }
    }

    var count: Int { ring.withLock { $0.items.count } }
}
