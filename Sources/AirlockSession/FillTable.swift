/// The fills in flight (request collapsing), by their keys' 64-bit hashes (`FillID`): for
/// each, how many requests wait for it. A few dozen at a time (one per concurrent miss), looked
/// up and registered on every miss and released when its answer comes: one array of two-word
/// slots, open addressing with linear probing at most half full, removal shifting the probe's
/// later slots back (no tombstones), as `EntryTable`'s buckets. A `Dictionary<FillID, Int>`
/// spent ~300 instructions a miss on its insert and removal (hashing the key again under its
/// seed, its bitmap, key and value lines); the hashes here are already a keyed SipHash, so
/// their low bits place a slot (a client cannot aim at one).
struct FillTable {
    private struct Slot {
        var hash: UInt64
        /// Waiters + 1; 0: the slot is empty.
        var held: Int
    }

    private var slots = [Slot](repeating: Slot(hash: 0, held: 0), count: 16)
    private var mask = 15
    private(set) var count = 0

    init() {}

    private static func home(_ hash: UInt64, _ mask: Int) -> Int { Int(truncatingIfNeeded: hash) & mask }

    /// The slot of `hash`, or the empty one where it would go.
    private func find(_ hash: UInt64) -> (index: Int, found: Bool) {
        slots.withUnsafeBufferPointer { s in
            var i = Self.home(hash, mask)
            while true {
                if s[i].held == 0 { return (i, false) }
                if s[i].hash == hash { return (i, true) }
                i = (i + 1) & mask
            }
        }
    }

    /// How many wait for `hash`'s fill; nil when none is in flight.
    func waiters(_ hash: UInt64) -> Int? {
        let (i, found) = find(hash)
        return found ? slots[i].held - 1 : nil
    }

    /// One probe: one more waiter for `hash`'s fill in flight (true), or `hash`'s fill
    /// registered, with no waiters (false).
    mutating func joinOrRegister(_ hash: UInt64) -> Bool {
        var (i, found) = find(hash)
        if found {
            slots[i].held += 1
            return true
        }
        if (count + 1) * 2 > slots.count {
            grow()
            i = find(hash).index
        }
        slots[i] = Slot(hash: hash, held: 1)
        count += 1
        return false
    }

    /// One probe: one more waiter for `hash`'s fill when it is in flight (true); otherwise
    /// nothing changes (false).
    mutating func joinIfInFlight(_ hash: UInt64) -> Bool {
        let (i, found) = find(hash)
        if found { slots[i].held += 1 }
        return found
    }

    /// Forgets `hash`'s fill; returns how many waited for it (nil when it was not in flight).
    mutating func remove(_ hash: UInt64) -> Int? {
        let (i, found) = find(hash)
        guard found else { return nil }
        let waiters = slots[i].held - 1
        let m = mask
        slots.withUnsafeMutableBufferPointer { s in
            var hole = i
            var j = i
            while true {
                j = (j + 1) & m
                guard s[j].held != 0 else { break }
                let k = Self.home(s[j].hash, m)
                if !LinearProbing.staysInPlace(home: k, hole: hole, at: j) {
                    s[hole] = s[j]
                    hole = j
                }
            }
            s[hole] = Slot(hash: 0, held: 0)
        }
        count -= 1
        return waiters
    }

    private mutating func grow() {
        let old = slots
        slots = [Slot](repeating: Slot(hash: 0, held: 0), count: old.count * 2)
        mask = slots.count - 1
        for slot in old where slot.held != 0 {
            var i = Self.home(slot.hash, mask)
            while slots[i].held != 0 { i = (i + 1) & mask }
            slots[i] = slot
        }
    }
}

/// Backward-shift removal in a linear-probing table (`EntryTable`, `FillTable`): after slot
/// `hole` is emptied, each later occupied slot `j` of the run moves back into the hole unless
/// it would then sit before its home.
enum LinearProbing {
    /// The entry at `j`, whose home slot is `home`, stays where it is: its home lies cyclically
    /// in (hole, j].
    @inline(__always)
    static func staysInPlace(home k: Int, hole: Int, at j: Int) -> Bool {
        hole <= j ? (hole < k && k <= j) : (hole < k || k <= j)
    }
}
