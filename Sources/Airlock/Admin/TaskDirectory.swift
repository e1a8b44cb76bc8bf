import AirlockIO
import AirlockSession

/// One worker's answer to `GET /tasks`: its in-flight tasks and its upstream connections.
struct WorkerTasks: Sendable {
    var worker: Int
    var tasks: [TaskSnapshot]
    /// Upstream connections open and not parked in the pool (connecting or serving).
    var upstreamsInUse: Int
    /// Parked in the pool.
    var upstreamsIdle: Int
}

/// The admin listener's way to every worker's tasks. Workers are threads with their own loops
/// and their objects never leave them: a question hops onto each worker's loop, and the
/// answers hop back onto the admin's loop, where `done` runs once all are in.
final class TaskDirectory: @unchecked Sendable {   // workers reached only through their loops
    private let loop: EventLoop
    /// Set once, before the worker loops start (`Gateway.attachTasks`).
    var workers: [Worker] = []

    init(loop: EventLoop) {
        self.loop = loop
    }

    func list(_ done: @escaping ([WorkerTasks]) -> Void) {
        gather({ $0.taskSnapshots() }, done)
    }

    /// Cancels the task `id` (all tasks when nil) wherever it runs.
    func cancel(id: String?, _ done: @escaping ([TaskSnapshot]) -> Void) {
        gather({ $0.cancelTasks(id: id) }) { done($0.flatMap { $0 }) }
    }

    /// `GET /cache`: every worker's cache entries per route (up to `limit` each).
    func cacheListing(limit: Int, _ done: @escaping ([[WorkerCache]]) -> Void) {
        gather({ $0.cacheListing(limit: limit) }, done)
    }

    /// `DELETE /cache[?url=]`: entries removed on every worker.
    func cacheRemove(url: String?, _ done: @escaping (Int) -> Void) {
        gather({ $0.cacheRemove(url: url) }) { done($0.reduce(0, +)) }
    }

    private func gather<T: Sendable>(_ ask: @escaping @Sendable (Worker) -> T, _ done: @escaping ([T]) -> Void) {
        let box = Gathering<T>(expected: workers.count, done: done)
        let loop = self.loop
        for w in workers {
            w.loop.execute {
                let answer = ask(w)
                loop.execute { box.add(answer) }
            }
        }
    }
}

/// Answers collected on the admin's loop (only ever touched there).
private final class Gathering<T: Sendable>: @unchecked Sendable {
    private var answers: [T] = []
    private let expected: Int
    private let done: ([T]) -> Void

    init(expected: Int, done: @escaping ([T]) -> Void) {
        self.expected = expected
        self.done = done
        if expected == 0 { done([]) }
    }

    func add(_ answer: T) {
        answers.append(answer)
        if answers.count == expected { done(answers) }
    }
}

extension TaskSnapshot {
    func appendJSON(to s: inout String) {
        s += "{\"id\":"
        JSON.appendString(id, to: &s)
        s += ",\"worker\":\(worker),\"route\":"
        JSON.appendString(route, to: &s)
        s += ",\"method\":"
        JSON.appendString(method, to: &s)
        s += ",\"url\":"
        JSON.appendString(url, to: &s)
        s += ",\"state\":\"\(state.rawValue)\",\"age_ms\":\((ageMillis * 1000).rounded() / 1000)"
        s += ",\"upload\":"
        upload.appendJSON(to: &s)
        s += ",\"download\":"
        download.appendJSON(to: &s)
        s += "}"
    }
}

extension TaskProgress {
    func appendJSON(to s: inout String) {
        s += "{\"bytes\":\(done)"
        if let expected { s += ",\"expected\":\(expected)" }
        if let f = fraction { s += ",\"fraction\":\((f * 10_000).rounded() / 10_000)" }
        s += "}"
    }
}
