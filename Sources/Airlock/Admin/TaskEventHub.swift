import AirlockIO
import AirlockSession
import Synchronization

/// `GET /events`' subscribers and the events workers post to them. Subscribers live on the
/// acceptor loop (with the admin listener); a worker that posts an event hops there with a
/// copy (`publish`), and only when someone listens: with no subscriber a post costs one
/// atomic load. Each subscriber has its own bounded `EventQueue`: one that reads slowly loses
/// events (and is told how many) and never holds up the proxy.
final class TaskEventHub: @unchecked Sendable {   // subscribers touched only on `loop`
    let loop: EventLoop
    /// The kinds some subscriber takes (`TaskEventKinds` bits): a kind nobody asked for is not
    /// posted at all, so a dashboard that takes only `rejected` and `cancelled` costs a busy
    /// gateway's requests one atomic load each, as no subscriber does.
    private let wanted = Atomic<UInt8>(0)
    private var subscribers: [ObjectIdentifier: (subscriber: any EventSubscriber, kinds: TaskEventKinds)] = [:]

    /// Events a subscriber may have queued beyond what its socket holds.
    static let queueCapacity = 256
    /// Output queued to a subscriber's socket before events wait in its queue instead.
    static let outputLimit = 64 * 1024

    init(loop: EventLoop) { self.loop = loop }

    /// Whether some subscriber takes `kind`: ask before building the event. From any loop.
    @inline(__always)
    func wants(_ kind: TaskEvent.Kind) -> Bool {
        wanted.load(ordering: .relaxed) & TaskEventKinds(kind).rawValue != 0
    }

    /// From any worker loop.
    func publish(_ event: TaskEvent) {
        loop.execute { [self] in
            for (s, kinds) in subscribers.values where kinds.contains(TaskEventKinds(event.kind)) { s.enqueue(event) }
        }
    }

    /// On `loop`. `kinds`: what this subscriber takes (`GET /events?kinds=…`; every kind without it).
    func subscribe(_ s: any EventSubscriber, kinds: TaskEventKinds = .all) {
        subscribers[ObjectIdentifier(s)] = (s, kinds)
        storeWanted()
    }

    /// On `loop`.
    func unsubscribe(_ s: any EventSubscriber) {
        subscribers.removeValue(forKey: ObjectIdentifier(s))
        storeWanted()
    }

    private func storeWanted() {
        wanted.store(subscribers.values.reduce(TaskEventKinds()) { $0.union($1.kinds) }.rawValue, ordering: .relaxed)
    }

    /// One SSE message: `event: <kind>` and its JSON `data:` line.
    static func message(_ e: TaskEvent) -> [UInt8] {
        var s = "event: \(e.kind.rawValue)\ndata: {\"event\":\"\(e.kind.rawValue)\",\"id\":"
        JSON.appendString(e.id, to: &s)
        s += ",\"route\":"
        JSON.appendString(e.route, to: &s)
        s += ",\"method\":"
        JSON.appendString(e.method, to: &s)
        s += ",\"url\":"
        JSON.appendString(e.url, to: &s)
        switch e.kind {
        case .completed, .rejected, .cancelled:
            if e.status != 0 { s += ",\"status\":\(e.status)" }
            s += ",\"bytes_in\":\(e.bytesIn),\"bytes_out\":\(e.bytesOut)"
            s += ",\"duration_ms\":\((e.durationMillis * 1000).rounded() / 1000)"
        case .resumed, .suspended:
            break
        }
        if let reason = e.reason {
            s += ",\"reason\":"
            JSON.appendString(reason, to: &s)
        }
        s += "}\n\n"
        return Array(s.utf8)
    }

    /// The notice that replaces events a slow subscriber lost.
    static func lostMessage(_ n: Int) -> [UInt8] {
        Array("event: lost\ndata: {\"event\":\"lost\",\"lost\":\(n),\"message\":\"lost \(n) events: this subscriber read too slowly\"}\n\n".utf8)
    }
}

/// Someone reading `GET /events`: takes events into its bounded queue and writes them out
/// as its socket takes them.
protocol EventSubscriber: AnyObject {
    func enqueue(_ event: TaskEvent)
}

/// A set of `TaskEvent.Kind`s, a bit each: what a `/events` subscriber takes.
struct TaskEventKinds: OptionSet, Sendable {
    let rawValue: UInt8

    init(rawValue: UInt8) { self.rawValue = rawValue }

    init(_ kind: TaskEvent.Kind) {
        rawValue = switch kind {
        case .resumed: 1
        case .suspended: 2
        case .completed: 4
        case .rejected: 8
        case .cancelled: 16
        }
    }

    static let all: TaskEventKinds = [.init(.resumed), .init(.suspended), .init(.completed), .init(.rejected), .init(.cancelled)]

    /// `rejected,cancelled` → those two; nil if a name is not a kind (or the list is empty).
    init?(list: String) {
        self.init()
        for name in list.split(separator: ",", omittingEmptySubsequences: false) {
            guard let kind = TaskEvent.Kind(rawValue: String(name)) else { return nil }
            insert(TaskEventKinds(kind))
        }
        if isEmpty { return nil }
    }
}
