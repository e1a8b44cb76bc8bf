/// The response cache's entries by their keys' 64-bit hashes (`FillID`), least recently used
/// last: what `BoundedLRU` does for the other tables, laid out for a table of ~100,000 entries
/// that takes one in and lets one go on every miss, with few cache lines per step:
///
/// - `nodes`: one 24-byte node per slot (the entry, its key's hash, its neighbours in the
///   recency list), where `BoundedLRU` keeps four arrays (four lines touched per slot).
/// - `buckets`: open addressing with linear probing, each bucket one word: the hash's low 32
///   bits over the slot + 1 (0: empty), at most half full. Only a bucket whose 32 bits match
///   reads its node, to compare all 64. Removal shifts the probe's later buckets back (no
///   tombstones), by the low bits they carry. A `Dictionary<FillID, Int>` read a bitmap, a key
///   and a value line per probe.
/// - `tags`: one byte per bucket, read before it: 0 for an empty bucket, else the hash's top 7
///   bits (and the high bit set). A probe walks the tags and reads a bucket only where its tag
///   matches, so a key that is not there (every miss) reads no bucket at all: the tags of
///   ~100,000 entries are 256 KiB, which stay in the processor's caches between lookups, where
///   the buckets (2 MiB) did not (perf: the lookup's one bucket read was ~0.18 us of a miss,
///   a line from memory).
///
/// Two keys may share a hash (`ResponseCache` confirms an entry's own key): the table holds one
/// entry per hash.
@usableFromInline struct EntryTable {
    private struct Node {
        var entry: ResponseCache.Entry?
        var hash: UInt64
        var prev: Int32
        var next: Int32
    }

    private var nodes: [Node] = []
    private var freeSlots: [Int32] = []
    private var buckets: [UInt64] = Array(repeating: 0, count: 16)
    private var tags: [UInt8] = Array(repeating: 0, count: 16)
    private var mask = 15
    private var head: Int32 = -1   // most recent
    private var tail: Int32 = -1   // least recent
    private(set) var count = 0

    init() {}

    // MARK: the index

    private static func home(_ low: UInt64, _ mask: Int) -> Int { Int(truncatingIfNeeded: low) & mask }

    /// `hash`'s tag: its top 7 bits, never 0 (the bits the home bucket is taken from are others).
    static func tag(_ hash: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: hash >> 57) | 0x80 }

    /// The bucket holding `hash`'s slot, if any.
    private func bucket(of hash: UInt64) -> Int? {
        let low = hash & 0xFFFF_FFFF
        let tag = Self.tag(hash)
        var i = Self.home(low, mask)
        return tags.withUnsafeBufferPointer { t in
            buckets.withUnsafeBufferPointer { b in
                nodes.withUnsafeBufferPointer { n in
                    while true {
                        let seen = t[i]
                        if seen == 0 { return nil }
                        if seen == tag {
                            let word = b[i]
                            if word >> 32 == low, n[Int(word & 0xFFFF_FFFF) - 1].hash == hash { return i }
                        }
                        i = (i + 1) & mask
                    }
                }
            }
        }
    }

    private mutating func index(_ hash: UInt64, slot: Int32) {
        if (count + 1) * 2 > buckets.count { grow() }
        let low = hash & 0xFFFF_FFFF
        var i = Self.home(low, mask)
        let m = mask
        tags.withUnsafeMutableBufferPointer { t in
            while t[i] != 0 { i = (i + 1) & m }
            t[i] = Self.tag(hash)
        }
        buckets[i] = low << 32 | UInt64(slot + 1)
    }

    /// Empties bucket `i`, moving later buckets of its probe run back so none is cut off from
    /// its home.
    private mutating func unindex(bucket i: Int) {
        let m = mask
        tags.withUnsafeMutableBufferPointer { t in
            buckets.withUnsafeMutableBufferPointer { b in
                var hole = i
                var j = i
                while true {
                    j = (j + 1) & m
                    if t[j] == 0 { break }
                    let word = b[j]
                    let k = Self.home(word >> 32, m)
                    if !LinearProbing.staysInPlace(home: k, hole: hole, at: j) {
                        b[hole] = word
                        t[hole] = t[j]
                        hole = j
                    }
                }
                b[hole] = 0
                t[hole] = 0
            }
        }
    }

    private mutating func grow() {
        let old = buckets, oldTags = tags
        buckets = Array(repeating: 0, count: old.count * 2)
        tags = Array(repeating: 0, count: old.count * 2)
        mask = buckets.count - 1
        let m = mask
        tags.withUnsafeMutableBufferPointer { t in
            buckets.withUnsafeMutableBufferPointer { b in
                for (word, tag) in zip(old, oldTags) where tag != 0 {
                    var i = Self.home(word >> 32, m)
                    while t[i] != 0 { i = (i + 1) & m }
                    b[i] = word
                    t[i] = tag
                }
            }
        }
    }

    // MARK: the recency list

    private mutating func unlink(_ i: Int32) {
        let p = nodes[Int(i)].prev, n = nodes[Int(i)].next
        if p >= 0 { nodes[Int(p)].next = n } else { head = n }
        if n >= 0 { nodes[Int(n)].prev = p } else { tail = p }
    }

    private mutating func pushFront(_ i: Int32) {
        nodes[Int(i)].prev = -1
        nodes[Int(i)].next = head
        if head >= 0 { nodes[Int(head)].prev = i }
        head = i
        if tail < 0 { tail = i }
    }

    // MARK: the table

    /// The entry of `hash`, its order unchanged.
    func peek(_ hash: UInt64) -> ResponseCache.Entry? {
        guard let b = bucket(of: hash) else { return nil }
        return nodes[Int(buckets[b] & 0xFFFF_FFFF) - 1].entry
    }

    /// Marks `hash`'s entry the most recently used; false when there is none.
    @discardableResult
    mutating func touch(_ hash: UInt64) -> Bool {
        guard let b = bucket(of: hash) else { return false }
        let i = Int32(buckets[b] & 0xFFFF_FFFF) - 1
        guard head != i else { return true }
        unlink(i)
        pushFront(i)
        return true
    }

    /// Stores `entry` for `hash`, the most recently used; returns the entry it replaced.
    mutating func updateValue(_ entry: ResponseCache.Entry, forKey hash: UInt64) -> ResponseCache.Entry? {
        if let b = bucket(of: hash) {
            let i = Int32(buckets[b] & 0xFFFF_FFFF) - 1
            let old = nodes[Int(i)].entry.take()
            nodes[Int(i)].entry = entry
            if head != i {
                unlink(i)
                pushFront(i)
            }
            return old
        }
        let i: Int32
        if let free = freeSlots.popLast() {
            i = free
            nodes[Int(i)] = Node(entry: entry, hash: hash, prev: -1, next: -1)
        } else {
            precondition(nodes.count < Int(Int32.max), "EntryTable: too many entries")
            i = Int32(nodes.count)
            nodes.append(Node(entry: entry, hash: hash, prev: -1, next: -1))
        }
        index(hash, slot: i)
        count += 1
        pushFront(i)
        return nil
    }

    /// Forgets `hash`'s entry and returns it; nil when there is none.
    @discardableResult
    mutating func remove(_ hash: UInt64) -> ResponseCache.Entry? {
        guard let b = bucket(of: hash) else { return nil }
        let i = Int32(buckets[b] & 0xFFFF_FFFF) - 1
        unindex(bucket: b)
        return release(i)
    }

    /// Forgets the least recently used entry and returns it; nil when empty.
    mutating func removeLeastRecent() -> ResponseCache.Entry? {
        guard tail >= 0 else { return nil }
        let i = tail
        guard let b = bucket(of: nodes[Int(i)].hash) else { preconditionFailure("EntryTable: a listed slot is not indexed") }
        unindex(bucket: b)
        return release(i)
    }

    private mutating func release(_ i: Int32) -> ResponseCache.Entry? {
        unlink(i)
        let entry = nodes[Int(i)].entry.take()
        freeSlots.append(i)
        count -= 1
        return entry
    }

    /// Calls `body` with each entry from the most to the least recently used, until it returns false.
    func forEachMostRecent(_ body: (ResponseCache.Entry) -> Bool) {
        var i = head
        while i >= 0 {
            guard body(nodes[Int(i)].entry.unsafelyUnwrapped) else { return }
            i = nodes[Int(i)].next
        }
    }
}
