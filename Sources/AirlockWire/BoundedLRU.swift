/// A map that holds at most `capacity` entries and forgets the least recently used one to make
/// room: an `origin` route's passive reachability per host (AirlockSession), so a forward proxy
/// that sees many hosts keeps a fixed amount of state, and the local CA's minted leaves per name
/// (AirlockIO's `LeafCache`). O(1) get/update/remove/evict (a dictionary over a doubly linked
/// list kept in arrays). Here, in the lowest module, because both of those import it. (The
/// response cache, which takes an entry in and lets one go on every miss, has its own table,
/// AirlockSession's `EntryTable`.)
public struct BoundedLRU<Key: Hashable, Value> {
    public let capacity: Int
    @usableFromInline var index: [Key: Int] = [:]
    @usableFromInline var keys: [Key?] = []
    @usableFromInline var values: [Value?] = []
    @usableFromInline var prev: [Int] = []
    @usableFromInline var next: [Int] = []
    @usableFromInline var head = -1   // most recent
    @usableFromInline var tail = -1   // least recent
    @usableFromInline var free: [Int] = []

    @inlinable
    public init(capacity: Int) {
        precondition(capacity > 0, "BoundedLRU needs a positive capacity")
        self.capacity = capacity
    }

    @inlinable
    public var count: Int { index.count }

    /// The value for `key`, marking it most recently used.
    @inlinable
    public mutating func get(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        touch(i)
        return values[i]
    }

    /// The value without changing the order.
    @inlinable
    public func peek(_ key: Key) -> Value? { index[key].flatMap { values[$0] } }

    /// Updates `key`'s value in place (inserting `make()` first when absent), marks it most
    /// recently used; returns the evicted key when the insert pushed the oldest out.
    @discardableResult
    @inlinable
    public mutating func update<R>(_ key: Key, default make: () -> Value, _ body: (inout Value) -> R) -> (R, evicted: Key?) {
        var evicted: Key?
        let i: Int
        if let existing = index[key] {
            i = existing
            touch(i)
        } else {
            if index.count == capacity { evicted = evictOldest() }
            i = allocate(key, make())
            index[key] = i
            pushFront(i)
        }
        var v = values[i]!
        values[i] = nil
        let r = body(&v)
        values[i] = v
        return (r, evicted)
    }

    /// Forgets `key` (its slot is reused by the next insert); returns its value, nil when absent.
    @discardableResult
    @inlinable
    public mutating func remove(_ key: Key) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        unlink(i)
        let v = values[i]
        keys[i] = nil
        values[i] = nil
        free.append(i)
        return v
    }

    /// Entries from most to least recently used.
    @inlinable
    public var entries: [(Key, Value)] {
        var out: [(Key, Value)] = []
        var i = head
        while i >= 0 {
            out.append((keys[i]!, values[i]!))
            i = next[i]
        }
        return out
    }

    @inlinable
    mutating func allocate(_ key: consuming Key, _ value: consuming Value) -> Int {
        if let i = free.popLast() {
            keys[i] = key
            values[i] = value
            return i
        }
        keys.append(key)
        values.append(value)
        prev.append(-1)
        next.append(-1)
        return keys.count - 1
    }

    @inlinable
    mutating func evictOldest() -> Key? {
        guard tail >= 0 else { return nil }
        let i = tail
        unlink(i)
        let k = keys[i]
        if let k { index.removeValue(forKey: k) }
        keys[i] = nil
        values[i] = nil
        free.append(i)
        return k
    }

    @inlinable
    mutating func touch(_ i: Int) {
        guard head != i else { return }
        unlink(i)
        pushFront(i)
    }

    @inlinable
    mutating func unlink(_ i: Int) {
        let p = prev[i], n = next[i]
        if p >= 0 { next[p] = n } else { head = n }
        if n >= 0 { prev[n] = p } else { tail = p }
        prev[i] = -1
        next[i] = -1
    }

    @inlinable
    mutating func pushFront(_ i: Int) {
        prev[i] = -1
        next[i] = head
        if head >= 0 { prev[head] = i }
        head = i
        if tail < 0 { tail = i }
    }
}
