/// Idle upstream connections of one worker, per upstream, most recently used first.
/// Pure bookkeeping: the owner closes what the pool hands back as evicted or stale, and
/// detects idle timeouts and peer closes itself (a pooled connection keeps reading).
public final class ConnectionPool<Connection: AnyObject> {
    public let maxIdlePerKey: Int
    private var idle: [UpstreamKey: [Connection]] = [:]
    public private(set) var stats = Stats()

    public struct Stats: Sendable, Equatable {
        public var reused = 0
        public var parked = 0
        public var evicted = 0
    }

    public init(maxIdlePerKey: Int) {
        self.maxIdlePerKey = maxIdlePerKey
    }

    /// Takes the most recently parked idle connection for `key`, if any.
    public func checkout(_ key: UpstreamKey) -> Connection? {
        // Mutate in place: copying the list out of the dictionary would copy (and retain)
        // every idle connection on each checkout.
        guard let c = idle[key]?.popLast() else { return nil }
        stats.reused += 1
        return c
    }

    /// Parks `connection` as idle. Returns a connection the caller must close: the oldest
    /// one when the cap is exceeded (or `connection` itself when the cap is zero).
    @discardableResult
    public func checkin(_ connection: Connection, key: UpstreamKey) -> Connection? {
        guard maxIdlePerKey > 0 else {
            stats.evicted += 1
            return connection
        }
        idle[key, default: []].append(connection)
        stats.parked += 1
        guard idle[key]!.count > maxIdlePerKey else { return nil }
        stats.evicted += 1
        return idle[key]!.removeFirst()
    }

    /// Takes `connection` out of the pool for reuse, if it is parked under `key` (counted
    /// as a reuse). The most recently parked are searched first.
    public func take(_ connection: Connection, key: UpstreamKey) -> Bool {
        guard let i = idle[key]?.lastIndex(where: { $0 === connection }) else { return false }
        idle[key]!.remove(at: i)
        stats.reused += 1
        return true
    }

    /// Forgets an idle connection (it closed, timed out or misbehaved). Returns whether it was parked.
    @discardableResult
    public func remove(_ connection: Connection, key: UpstreamKey) -> Bool {
        guard let i = idle[key]?.lastIndex(where: { $0 === connection }) else { return false }
        idle[key]!.remove(at: i)
        return true
    }

    /// Takes the oldest idle connection of some upstream, for the caller to close: frees a
    /// descriptor when the process has none left for a new connection.
    public func removeOldest() -> Connection? {
        for key in idle.keys where !(idle[key]!.isEmpty) {
            stats.evicted += 1
            return idle[key]!.removeFirst()
        }
        return nil
    }

    public func idleCount(for key: UpstreamKey) -> Int { idle[key]?.count ?? 0 }
    // Emptied lists stay in the dictionary: keys are few (one per upstream) and keeping
    // them avoids re-allocating the list on every park.

    public var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }

    /// Empties the pool, returning every idle connection for the caller to close.
    public func removeAll() -> [Connection] {
        let all = idle.values.flatMap { $0 }
        idle.removeAll()
        return all
    }
}
