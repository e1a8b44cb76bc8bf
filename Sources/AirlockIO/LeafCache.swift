import AirlockWire

/// Minted leaves by name, at most `capacity`, forgetting the least recently used to make
/// room (a `BoundedLRU`: hits, inserts and evictions are O(1)). A leaf within an hour of its
/// notAfter is treated as absent, so a long-running process mints it again. Not thread-safe:
/// `TLSServerContext` holds it under a mutex.
struct LeafCache {
    private var leaves: BoundedLRU<LeafName, LeafCertificate>

    init(capacity: Int) {
        precondition(capacity > 0, "LeafCache needs a positive capacity")
        leaves = BoundedLRU(capacity: capacity)
    }

    var capacity: Int { leaves.capacity }

    var count: Int { leaves.count }

    /// The leaf for `name`, marked most recently used; nil when absent or about to expire.
    mutating func get(_ name: LeafName, now: Int64) -> LeafCertificate? {
        guard let leaf = leaves.peek(name) else { return nil }
        guard leaf.expirySeconds - 3_600 > now else {
            leaves.remove(name)
            return nil
        }
        return leaves.get(name)
    }

    /// Stores `leaf` for `name`; returns the name evicted to make room, if any.
    @discardableResult
    mutating func insert(_ leaf: LeafCertificate, for name: LeafName) -> LeafName? {
        leaves.update(name, default: { leaf }) { $0 = leaf }.evicted
    }
}
