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
        guard var list = idle[key], let c = list.popLast() else { return nil }
        idle[key] = list.isEmpty ? nil : list
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
        var list = idle[key, default: []]
        list.append(connection)
        stats.parked += 1
        var evicted: Connection?
        if list.count > maxIdlePerKey {
            evicted = list.removeFirst()
            stats.evicted += 1
        }
        idle[key] = list
        return evicted
    }

    /// Forgets an idle connection (it closed, timed out or misbehaved). Returns whether it was parked.
    @discardableResult
    public func remove(_ connection: Connection, key: UpstreamKey) -> Bool {
        guard var list = idle[key], let i = list.firstIndex(where: { $0 === connection }) else { return false }
        list.remove(at: i)
        idle[key] = list.isEmpty ? nil : list
        return true
    }

    public func idleCount(for key: UpstreamKey) -> Int { idle[key]?.count ?? 0 }

    public var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }

    /// Empties the pool, returning every idle connection for the caller to close.
    public func removeAll() -> [Connection] {
        let all = idle.values.flatMap { $0 }
        idle.removeAll()
        return all
    }
}
