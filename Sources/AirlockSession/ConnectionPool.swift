/// Idle upstream connections of one worker, per upstream, most recently used first.
/// Pure bookkeeping: the owner closes what the pool hands back as evicted or stale, and
/// detects idle timeouts and peer closes itself (a pooled connection keeps reading).
///
/// On the hot path (every exchange parks and takes a connection) each operation hashes its
/// key once and mutates the list in place; the methods are inlinable so that the worker's
/// `ConnectionPool<UpstreamConnection>` is specialized rather than run through generics.
public final class ConnectionPool<Connection: AnyObject> {
    public let maxIdlePerKey: Int
    @usableFromInline var idle: [UpstreamKey: [Connection]] = [:]
    public private(set) var stats = Stats()

    public struct Stats: Sendable, Equatable {
        public var reused = 0
        public var parked = 0
        public var evicted = 0
    }

    public init(maxIdlePerKey: Int) {
        self.maxIdlePerKey = maxIdlePerKey
    }

    @usableFromInline func countReused() { stats.reused += 1 }
    @usableFromInline func countParked() { stats.parked += 1 }
    @usableFromInline func countEvicted() { stats.evicted += 1 }

    /// Takes the most recently parked idle connection for `key`, if any.
    @inlinable
    public func checkout(_ key: UpstreamKey) -> Connection? {
        // Mutate in place: copying the list out of the dictionary would copy (and retain)
        // every idle connection on each checkout.
        guard let c = idle[key]?.popLast() else { return nil }
        countReused()
        return c
    }

    /// Parks `connection` as idle. Returns a connection the caller must close: the oldest
    /// one when the cap is exceeded (or `connection` itself when the cap is zero).
    @inlinable
    @discardableResult
    public func checkin(_ connection: Connection, key: UpstreamKey) -> Connection? {
        guard maxIdlePerKey > 0 else {
            countEvicted()
            return connection
        }
        countParked()
        let cap = maxIdlePerKey
        let evicted: Connection? = Self.mutate(&idle[key, default: []]) { list in
            list.append(connection)
            return list.count > cap ? list.removeFirst() : nil
        }
        if evicted != nil { countEvicted() }
        return evicted
    }

    /// Takes `connection` out of the pool for reuse, if it is parked under `key` (counted
    /// as a reuse). The most recently parked are searched first; the last one costs nothing.
    @inlinable
    public func take(_ connection: Connection, key: UpstreamKey) -> Bool {
        let taken: Bool = Self.mutate(&idle[key, default: []]) { list in
            if list.last === connection {
                list.removeLast()
                return true
            }
            guard let i = list.lastIndex(where: { $0 === connection }) else { return false }
            list.remove(at: i)
            return true
        }
        if taken { countReused() }
        return taken
    }

    /// Forgets an idle connection (it closed, timed out or misbehaved). Returns whether it was parked.
    @inlinable
    @discardableResult
    public func remove(_ connection: Connection, key: UpstreamKey) -> Bool {
        Self.mutate(&idle[key, default: []]) { list in
            guard let i = list.lastIndex(where: { $0 === connection }) else { return false }
            list.remove(at: i)
            return true
        }
    }

    /// One hashed access, the list mutated in place.
    @inlinable
    static func mutate<R>(_ list: inout [Connection], _ body: (inout [Connection]) -> R) -> R { body(&list) }

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

    /// Takes every idle connection whose key `where` picks, for the caller to close.
    public func removeAll(where predicate: (UpstreamKey) -> Bool) -> [Connection] {
        var out: [Connection] = []
        for key in idle.keys where predicate(key) {
            out += idle[key] ?? []
            idle[key] = []
        }
        return out
    }
}
