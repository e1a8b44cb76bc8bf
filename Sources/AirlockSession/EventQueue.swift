/// A bounded first-in first-out queue of events for one subscriber who may read slowly.
/// It never grows past `capacity`: when full, new events are dropped and counted, and the
/// subscriber is told how many it lost (`Entry.lost`) in their place, before the next event
/// that fits (or when it has read everything else). A slow subscriber thus costs bounded
/// memory and never slows whoever publishes.
public struct EventQueue<Event: Sendable>: Sendable {
    public enum Entry: Sendable {
        case event(Event)
        case lost(Int)   // this many events were dropped here
    }

    public let capacity: Int
    private var entries: [Entry] = []
    private var head = 0
    /// Dropped since the last `lost` entry was queued.
    public private(set) var pendingLost = 0
    /// Dropped over the queue's life.
    public private(set) var totalLost = 0

    /// `capacity` is at least 2: room for an event and a loss notice.
    public init(capacity: Int) {
        self.capacity = max(2, capacity)
        entries.reserveCapacity(self.capacity)
    }

    public var count: Int { entries.count - head }
    public var isEmpty: Bool { count == 0 && pendingLost == 0 }

    /// Queues `event`, or drops it (counted) when the queue is full. A pending loss notice
    /// goes in first, so the subscriber learns of the gap where it happened. Returns whether
    /// the event was queued.
    @discardableResult
    public mutating func push(_ event: Event) -> Bool {
        let needed = pendingLost > 0 ? 2 : 1
        guard count + needed <= capacity else {
            pendingLost += 1
            totalLost += 1
            return false
        }
        compactIfNeeded()
        if pendingLost > 0 {
            entries.append(.lost(pendingLost))
            pendingLost = 0
        }
        entries.append(.event(event))
        return true
    }

    /// The oldest entry; once the queued events are read, the notice of any still pending loss.
    public mutating func pop() -> Entry? {
        if head < entries.count {
            let e = entries[head]
            head += 1
            if head == entries.count {
                entries.removeAll(keepingCapacity: true)
                head = 0
            }
            return e
        }
        if pendingLost > 0 {
            defer { pendingLost = 0 }
            return .lost(pendingLost)
        }
        return nil
    }

    private mutating func compactIfNeeded() {
        if head > 0 && head >= entries.count / 2 {
            entries.removeFirst(head)
            head = 0
        }
    }
}
