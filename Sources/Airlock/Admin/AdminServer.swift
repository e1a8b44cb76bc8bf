import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire
import Glibc

/// The admin listener: `GET /` (the dashboard page, `DashboardPage`), `GET /rejects` (JSON,
/// optional `since=10m`, `route=NAME` and `side=request|response`; both sides without it),
/// `GET /ca` (the local CA's facts),
/// `GET /healthz`, `GET /readyz`, `GET|DELETE /tasks`, `DELETE /tasks/{id}` and `GET /events`
/// (Server-Sent Events), on its own socket and on the acceptor loop, never on the proxy
/// listener. One request per connection; the answer closes it (`/events` streams until the
/// client leaves). `/tasks` is answered once every worker has (`TaskDirectory`).
final class AdminServer {
    let address: SocketAddress
    private let listener: Listener
    private let rejects: RejectLog
    /// `admin_token`'s bytes: requests must carry `Authorization: Bearer <token>`.
    private let token: [UInt8]?
    /// Whether the gateway takes traffic (`/readyz`): false once it drains.
    private let isReady: () -> Bool
    private var connections: [ObjectIdentifier: AdminConnection] = [:]
    /// Every worker's tasks (`/tasks`) and their lifecycle events (`/events`); nil in tests
    /// that start an admin server alone.
    let tasks: TaskDirectory?
    let events: TaskEventHub?
    /// The kernel's send buffer for a `/events` subscriber's socket: bounded, so that one that
    /// stops reading fills it soon and then loses events instead of holding memory. (Only
    /// theirs: a whole answer through a buffer this small goes at one segment per delayed ACK,
    /// ~1.5 MB/s on loopback, and a large `GET /cache` was cut off.)
    static let sendBufferBytes: Int32 = 32 * 1024
    /// `/metrics` and `/upstreams`.
    private let metrics: GatewayMetrics?
    /// Replaced by a reload (on this loop).
    var reachability: Reachabilities?
    /// `POST /reload`: reloads on this loop (the acceptor's) and answers with the outcome.
    var onReload: (() -> ReloadOutcome)?
    /// `/ca`: the local CA of intercepted tunnels; nil without `ca:`. Replaced by a reload.
    var ca: CertificateAuthority?

    static let wireLimits = WireLimits(requestLineBytes: 4096, headerBytes: 16384, headerCount: 64)
    static let timeout: Duration = .seconds(10)

    /// Binds at once, so a taken port is reported when the gateway starts.
    init(loop: EventLoop, address: ListenAddress, rejects: RejectLog, token: String?, isReady: @escaping () -> Bool,
         tasks: TaskDirectory? = nil, events: TaskEventHub? = nil,
         metrics: GatewayMetrics? = nil, reachability: Reachabilities? = nil,
         ca: CertificateAuthority? = nil) throws {
        self.tasks = tasks
        self.ca = ca
        self.events = events
        self.metrics = metrics
        self.reachability = reachability
        listener = try Listener(loop: loop, host: address.host, port: address.port, backlog: 64)
        self.address = listener.address
        self.rejects = rejects
        self.token = token.map { Array($0.utf8) }
        self.isReady = isReady
        listener.onAccept = { [unowned self, unowned loop] fd, _ in
            let c = AdminConnection(loop: loop, fd: fd, server: self)
            self.connections[ObjectIdentifier(c)] = c
        }
    }

    func close() {
        listener.close()
        for c in Array(connections.values) { c.closeNow() }
        connections = [:]
    }

    fileprivate func finished(_ c: AdminConnection) {
        connections.removeValue(forKey: ObjectIdentifier(c))
    }

    // MARK: routing

    /// The whole response for one request head; nil when `c` answers later (`/tasks`, `/events`).
    fileprivate func respond(to head: RequestHead, on c: AdminConnection) -> [UInt8]? {
        let target: String
        switch head.target {
        case .origin(let p), .absolute(_, _, _, let p): target = p
        default: return Self.error(404, "not-found", "no such admin resource")
        }
        let (path, query) = Self.splitQuery(target)
        // The page alone is served without the token: it holds no data, and asks for the token
        // before it requests any.
        if path == "/" {
            guard head.method == .get else {
                return Self.error(405, "method-not-allowed", "\(head.method.name) is not allowed; use GET",
                                  extra: [("Allow", "GET")])
            }
            return token == nil ? DashboardPage.open : DashboardPage.tokenRequired
        }
        if let token, !Self.authorized(head.headers.first(name: "authorization"), token: token) {
            return Self.error(401, "unauthorized", "this admin listener needs Authorization: Bearer <admin_token>",
                              extra: [("WWW-Authenticate", "Bearer realm=\"airlock-admin\"")])
        }
        if path == "/tasks" || path.hasPrefix("/tasks/") || path == "/events" {
            return taskRoute(head.method, path, query, c)
        }
        if path == "/cache" {
            return cacheRoute(head.method, query, c)
        }
        if path == "/reload" {
            guard head.method == .post else {
                return Self.error(405, "method-not-allowed", "\(head.method.name) is not allowed; use POST",
                                  extra: [("Allow", "POST")])
            }
            guard let onReload else { return Self.error(501, "reload-unavailable", "this process cannot reload") }
            let outcome = onReload()
            return Self.response(outcome.succeeded ? 200 : 400, body: Array((outcome.json + "\n").utf8))
        }
        switch path {
        case "/rejects", "/healthz", "/readyz", "/metrics", "/upstreams", "/ca": break
        default: return Self.error(404, "not-found", "no such admin resource: \(path) (try /, /rejects, /healthz, /readyz, /metrics, /upstreams, /ca, /tasks, /events, /cache or POST /reload)")
        }
        guard head.method == .get else {
            return Self.error(405, "method-not-allowed", "\(head.method.name) is not allowed; use GET",
                              extra: [("Allow", "GET")])
        }
        if path == "/metrics", let metrics {
            return Self.response(200, body: metrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        if path == "/upstreams", let reachability { return Self.response(200, body: reachability.json()) }
        if path == "/ca" { return Self.response(200, body: Self.caJSON(ca)) }
        if path == "/healthz" { return Self.response(200, body: Array("{\"status\":\"ok\"}\n".utf8)) }
        if path == "/readyz" {
            return isReady() ? Self.response(200, body: Array("{\"status\":\"ready\"}\n".utf8))
                : Self.error(503, "draining", "the gateway is shutting down and takes no new connections")
        }

        var since: Int64?
        var route: String?
        var side: RejectRecord.Side?
        for (key, value) in query {
            switch key {
            case "since":
                guard let duration = ConfigSyntax.parseDuration(value) else {
                    return Self.error(400, "bad-query", "since: expected a duration such as 30s, 10m or 1h, got \"\(value)\"")
                }
                let (seconds, attoseconds) = duration.components
                since = RejectRecord.nowUnixMillis() - (seconds * 1000 + attoseconds / 1_000_000_000_000_000)
            case "route":
                route = value
            case "side":
                guard let s = RejectRecord.Side(rawValue: value) else {
                    return Self.error(400, "bad-query", "side: expected request or response, got \"\(value)\"")
                }
                side = s
            default:
                return Self.error(400, "bad-query", "unknown query parameter \"\(key)\" (since, route, side)")
            }
        }
        var e = JSONLineEncoder()
        e.append("{\"rejects\":[")
        for (i, record) in rejects.records(sinceUnixMillis: since, route: route, side: side).enumerated() {
            if i > 0 { e.append(",\n") }
            record.appendJSON(to: &e)
        }
        e.append("]}\n")
        return Self.response(200, body: e.bytes)
    }

    // MARK: the response cache

    /// Entries `GET /cache` lists per route unless `limit` says otherwise, and the most it may say.
    static let cacheListingLimit = 1_000
    static let cacheListingMaximum = 1_000_000

    /// `GET /cache[?limit=N]`: per route, the count of cached entries (all workers), their bytes
    /// and hits, and the `limit` (1,000 by default) most recently used entries (each worker's,
    /// most recent first; `truncated` when there are more);
    /// `DELETE /cache[?url=<absolute URL>]`: removes that URL's entries, or all.
    private func cacheRoute(_ method: AirlockWire.Method, _ query: [(String, String)], _ c: AdminConnection) -> [UInt8]? {
        guard let tasks else { return Self.error(404, "not-found", "no cache on this admin listener") }
        var url: String?
        var limit = Self.cacheListingLimit
        for (key, value) in query {
            switch (method, key) {
            case (.delete, "url"):
                url = value
            case (.get, "limit"):
                guard value.utf8.count <= 7, let n = Int(value), n >= 0, n <= Self.cacheListingMaximum else {
                    return Self.error(400, "bad-query", "limit must be a whole number from 0 to \(Self.cacheListingMaximum), not \"\(value)\"")
                }
                limit = n
            default:
                return Self.error(400, "bad-query", "unknown query parameter \"\(key)\" (GET /cache takes limit, DELETE /cache takes url)")
            }
        }
        switch method {
        case .get:
            tasks.cacheListing(limit: limit) { [c] answers in
                var byRoute: [String: (entries: [ResponseCache.Listing], count: Int, bytes: Int, hits: Int)] = [:]
                for w in answers.joined() {
                    byRoute[w.route, default: ([], 0, 0, 0)].entries += w.entries
                    byRoute[w.route, default: ([], 0, 0, 0)].count += w.count
                    byRoute[w.route, default: ([], 0, 0, 0)].bytes += w.bytes
                    byRoute[w.route, default: ([], 0, 0, 0)].hits += w.counters.hits
                }
                var s = "{\"routes\":["
                for (i, (name, r)) in byRoute.sorted(by: { $0.key < $1.key }).enumerated() {
                    if i > 0 { s += ",\n" }
                    s += "{\"route\":"
                    JSON.appendString(name, to: &s)
                    let items = r.entries.prefix(limit)
                    s += ",\"entries\":\(r.count),\"bytes\":\(r.bytes),\"hits\":\(r.hits),\"truncated\":\(items.count < r.count),\"items\":["
                    for (j, e) in items.enumerated() {
                        if j > 0 { s += "," }
                        s += "{\"url\":"
                        JSON.appendString(e.url, to: &s)
                        if !e.variant.isEmpty {
                            s += ",\"variant\":"
                            JSON.appendString(e.variant, to: &s)
                        }
                        s += ",\"status\":\(e.status),\"bytes\":\(e.bytes),\"hits\":\(e.hits),\"age\":\(e.age),\"fresh\":\(e.fresh)}"
                    }
                    s += "]}"
                }
                s += "]}\n"
                c.answer(Self.response(200, body: Array(s.utf8)))
            }
            return nil
        case .delete:
            tasks.cacheRemove(url: url) { [c] removed in
                c.answer(Self.response(200, body: Array("{\"removed\":\(removed)}\n".utf8)))
            }
            return nil
        default:
            return Self.error(405, "method-not-allowed", "\(method.name) is not allowed; use GET or DELETE",
                              extra: [("Allow", "GET, DELETE")])
        }
    }

    // MARK: tasks and events

    private func taskRoute(_ method: AirlockWire.Method, _ path: String, _ query: [(String, String)],
                           _ c: AdminConnection) -> [UInt8]? {
        var kinds = TaskEventKinds.all
        for (key, value) in query {
            guard path == "/events", key == "kinds" else {
                return Self.error(400, "bad-query", "unknown query parameter \"\(key)\" (\(path) takes "
                                  + (path == "/events" ? "kinds" : "none") + ")")
            }
            guard let k = TaskEventKinds(list: value) else {
                return Self.error(400, "bad-query", "kinds: expected a comma-separated list of resumed, suspended, "
                                  + "completed, rejected, cancelled, got \"\(value)\"")
            }
            kinds = k
        }
        guard let tasks, let events else { return Self.error(404, "not-found", "no tasks on this admin listener") }
        if path == "/events" {
            guard method == .get else {
                return Self.error(405, "method-not-allowed", "\(method.name) is not allowed; use GET", extra: [("Allow", "GET")])
            }
            c.startEvents(events, kinds: kinds)
            return nil
        }
        if path == "/tasks" {
            switch method {
            case .get:
                tasks.list { [c] answers in
                    var s = "{\"tasks\":["
                    var first = true
                    var inUse = 0, idle = 0
                    for w in answers {
                        inUse += w.upstreamsInUse
                        idle += w.upstreamsIdle
                    }
                    for t in answers.flatMap(\.tasks).sorted(by: { $0.ageMillis > $1.ageMillis }) {   // oldest first
                        if !first { s += ",\n" }
                        first = false
                        t.appendJSON(to: &s)
                    }
                    s += "],\"upstreams\":{\"in_use\":\(inUse),\"idle\":\(idle)}}\n"
                    c.answer(Self.response(200, body: Array(s.utf8)))
                }
                return nil
            case .delete:
                cancel(id: nil, c)
                return nil
            default:
                return Self.error(405, "method-not-allowed", "\(method.name) is not allowed; use GET or DELETE",
                                  extra: [("Allow", "GET, DELETE")])
            }
        }
        let id = String(path.dropFirst("/tasks/".count))
        guard method == .delete else {
            return Self.error(405, "method-not-allowed", "\(method.name) is not allowed; use DELETE", extra: [("Allow", "DELETE")])
        }
        guard RequestIDSyntax.isWellFormed(id) else {
            return Self.error(400, "bad-task-id", "a task id is 1 to 128 characters of A-Z a-z 0-9 . _ : -")
        }
        cancel(id: id, c)
        return nil
    }

    private func cancel(id: String?, _ c: AdminConnection) {
        tasks?.cancel(id: id) { [c] cancelled in
            if let id, cancelled.isEmpty {
                var msg = "no task in flight with id "
                JSON.appendString(id, to: &msg)
                c.answer(Self.error(404, "no-such-task", msg))
                return
            }
            var s = "{\"cancelled\":["
            for (i, t) in cancelled.enumerated() {
                if i > 0 { s += ",\n" }
                t.appendJSON(to: &s)
            }
            s += "]}\n"
            c.answer(Self.response(200, body: Array(s.utf8)))
        }
    }

    /// `{"configured":true,"subject":…,"sha256_fingerprint":…,"expires":…,"expires_unix":…,
    /// "permits":[…],"certificate":…}`, or `{"configured":false}` without `ca:`.
    static func caJSON(_ ca: CertificateAuthority?) -> [UInt8] {
        guard let ca else { return Array("{\"configured\":false}\n".utf8) }
        var s = "{\"configured\":true,\"subject\":"
        JSON.appendString(ca.subject, to: &s)
        s += ",\"sha256_fingerprint\":"
        JSON.appendString(ca.fingerprint, to: &s)
        s += ",\"expires\":"
        JSON.appendString(ca.expiry, to: &s)
        s += ",\"expires_unix\":\(ca.expirySeconds),\"permits\":["
        for (i, name) in ca.permittedNames.enumerated() {
            if i > 0 { s += "," }
            JSON.appendString(name, to: &s)
        }
        s += "],\"certificate\":"
        JSON.appendString(ca.certificatePath, to: &s)
        s += "}\n"
        return Array(s.utf8)
    }

    /// `/rejects?since=10m&route=api` → ("/rejects", [("since", "10m"), ("route", "api")]), percent-decoded.
    /// `Bearer <token>`, compared in constant time: every byte is looked at whatever the first
    /// difference, so the time taken says nothing about how much of a guess was right.
    static func authorized(_ header: String?, token: [UInt8]) -> Bool {
        guard let header else { return false }
        let value = Array(header.utf8)
        let scheme = Array("bearer ".utf8)
        guard value.count == scheme.count + token.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<scheme.count { diff |= (value[i] | 0x20) ^ scheme[i] }
        for i in 0..<token.count { diff |= value[scheme.count + i] ^ token[i] }
        return diff == 0
    }

    static func splitQuery(_ target: String) -> (String, [(String, String)]) {
        guard let q = target.firstIndex(of: "?") else { return (target, []) }
        let pairs = target[target.index(after: q)...].split(separator: "&").map { part -> (String, String) in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (percentDecoded(kv[0]), kv.count > 1 ? percentDecoded(kv[1]) : "")
        }
        return (String(target[..<q]), pairs)
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2,
               let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b == UInt8(ascii: "+") ? 0x20 : b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func response(_ status: Int, body: [UInt8], extra: [(String, String)] = [],
                         contentType: String = "application/json") -> [UInt8] {
        var w = HeadWriter(capacity: 256)
        w.statusLine(status: status, reason: ReasonPhrase.standard(for: status))
        w.field(name: "Content-Type", value: contentType)
        w.field(name: "Content-Length", value: String(body.count))
        w.field(name: "Cache-Control", value: "no-store")
        for (name, value) in extra { w.field(name: name, value: value) }
        w.field(name: "Connection", value: "close")
        w.end()
        return w.bytes + body
    }

    static func error(_ status: Int, _ error: String, _ message: String, extra: [(String, String)] = []) -> [UInt8] {
        var s = "{\"error\":"
        JSON.appendString(error, to: &s)
        s += ",\"message\":"
        JSON.appendString(message, to: &s)
        s += "}\n"
        return response(status, body: Array(s.utf8), extra: extra)
    }
}

/// One admin client: reads a request head, answers (at once, or once the workers have),
/// closes after the answer is flushed; or, for `/events`, streams events until it leaves.
private final class AdminConnection: StreamDelegate, EventSubscriber {
    let stream: Stream
    private unowned let server: AdminServer
    private var scanner = HeadScanner(kind: .request, limits: AdminServer.wireLimits)
    private var answered = false
    private var finished = false
    /// `/events`: the hub and this subscriber's bounded queue.
    private var hub: TaskEventHub?
    private var queue = EventQueue<TaskEvent>(capacity: TaskEventHub.queueCapacity)

    /// The socket, for `/events`' bounded send buffer.
    private let fd: Int32

    init(loop: EventLoop, fd: Int32, server: AdminServer) {
        self.server = server
        self.fd = fd
        stream = Stream(loop: loop, fd: fd)
        stream.delegate = self
        stream.setReadHighWatermark(AdminServer.wireLimits.headerBytes + 4)
        stream.setTimeouts(read: AdminServer.timeout, write: AdminServer.timeout)
    }

    func streamReadable(_ s: Stream) {
        guard !answered else {
            stream.drainInput(stream.inputLength)   // nothing more is read: one request per connection
            return
        }
        let answer: [UInt8]
        do throws(WireError) {
            guard let head = try stream.readOneRequestHead(&scanner, limits: AdminServer.wireLimits) else { return }
            answered = true
            guard let now = server.respond(to: head, on: self) else { return }   // answered later
            answer = now
        } catch {
            answer = AdminServer.error(error.status, error.reason, error.detail)
        }
        answered = true
        self.answer(answer)
    }

    /// The whole answer; the connection closes once it is flushed. Ignored once the client left.
    func answer(_ bytes: [UInt8]) {
        guard !finished else { return }
        finished = true
        stream.write(bytes)
        let server = self.server
        stream.closeAfterFlush { [self] in server.finished(self) }
    }

    // MARK: /events

    static let eventsHead = Array(("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
        + "Connection: close\r\n\r\n: airlock task events\n\n").utf8)

    func startEvents(_ hub: TaskEventHub, kinds: TaskEventKinds) {
        self.hub = hub
        var size = AdminServer.sendBufferBytes
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        stream.write(Self.eventsHead)
        // A subscriber waits as long as it likes; one that stops reading is closed only when
        // its socket takes nothing for this long (it loses events meanwhile).
        stream.setTimeouts(read: nil, write: .seconds(60))
        stream.setWriteLowWatermark(TaskEventHub.outputLimit / 2)
        hub.subscribe(self, kinds: kinds)
    }

    func enqueue(_ event: TaskEvent) {
        queue.push(event)
        flushEvents()
    }

    private func flushEvents() {
        guard !finished else { return }
        while stream.outputLength < TaskEventHub.outputLimit, let entry = queue.pop() {
            switch entry {
            case .event(let e): stream.write(TaskEventHub.message(e))
            case .lost(let n): stream.write(TaskEventHub.lostMessage(n))
            }
        }
    }

    func streamWritable(_ s: Stream) {
        if hub != nil { flushEvents() }
    }

    func closeNow() {
        finished = true
        hub?.unsubscribe(self)
        hub = nil
        stream.close()
    }

    func stream(_ s: Stream, event: StreamEvent) {
        finished = true
        hub?.unsubscribe(self)
        hub = nil
        stream.close()
        server.finished(self)
    }
}
