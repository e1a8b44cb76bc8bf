import Glibc

/// Minted leaves by name, at most `capacity`, forgetting the least recently used to make
/// room. Eviction scans (O(capacity)), which costs far less than the signature a miss
/// pays anyway; hits are a dictionary lookup. A leaf within an hour of its notAfter is
/// treated as absent, so a long-running process mints it again. Not thread-safe:
/// `TLSServerContext` holds it under a mutex.
struct LeafCache {
    let capacity: Int
    private var entries: [LeafName: (leaf: LeafCertificate, used: UInt64)] = [:]
    private var clock: UInt64 = 0

    init(capacity: Int) {
        precondition(capacity > 0, "LeafCache needs a positive capacity")
        self.capacity = capacity
    }

    var count: Int { entries.count }

    /// The leaf for `name`, marked most recently used; nil when absent or about to expire.
    mutating func get(_ name: LeafName, now: Int64) -> LeafCertificate? {
        guard let entry = entries[name] else { return nil }
        guard entry.leaf.expirySeconds - 3_600 > now else {
            entries[name] = nil
            return nil
        }
        clock += 1
        entries[name] = (entry.leaf, clock)
        return entry.leaf
    }

    /// Stores `leaf` for `name`; returns the name evicted to make room, if any.
    @discardableResult
    mutating func insert(_ leaf: LeafCertificate, for name: LeafName) -> LeafName? {
        var evicted: LeafName?
        if entries[name] == nil && entries.count >= capacity {
            evicted = entries.min { $0.value.used < $1.value.used }?.key
            if let evicted { entries[evicted] = nil }
        }
        clock += 1
        entries[name] = (leaf, clock)
        return evicted
    }
}
