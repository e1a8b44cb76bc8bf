import AirlockIO
import AirlockWire

/// The admin listener: `GET /rejects` (JSON, optional `since=10m` and `route=NAME`) and
/// `GET /healthz`, on its own socket and on the acceptor loop, never on the proxy listener.
/// One request per connection; the answer closes it.
final class AdminServer {
    let address: SocketAddress
    private let listener: Listener
    private let rejects: RejectLog
    /// `admin_token`'s bytes: requests must carry `Authorization: Bearer <token>`.
    private let token: [UInt8]?
    /// Whether the gateway takes traffic (`/readyz`): false once it drains.
    private let isReady: () -> Bool
    private var connections: [ObjectIdentifier: AdminConnection] = [:]
    /// `/metrics` and `/upstreams`.
    private let metrics: GatewayMetrics?
    private let reachability: Reachabilities?

    static let wireLimits = WireLimits(requestLineBytes: 4096, headerBytes: 16384, headerCount: 64)
    static let timeout: Duration = .seconds(10)

    /// Binds at once, so a taken port is reported when the gateway starts.
    init(loop: EventLoop, address: ListenAddress, rejects: RejectLog, token: String?, isReady: @escaping () -> Bool,
         metrics: GatewayMetrics? = nil, reachability: Reachabilities? = nil) throws {
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
        for c in Array(connections.values) { c.stream.close() }
        connections = [:]
    }

    fileprivate func finished(_ c: AdminConnection) {
        connections.removeValue(forKey: ObjectIdentifier(c))
    }

    // MARK: routing

    /// The whole response for one request head.
    fileprivate func respond(to head: RequestHead) -> [UInt8] {
        let target: String
        switch head.target {
        case .origin(let p), .absolute(_, _, _, let p): target = p
        default: return Self.error(404, "not-found", "no such admin resource")
        }
        if let token, !Self.authorized(head.headers.first(name: "authorization"), token: token) {
            return Self.error(401, "unauthorized", "this admin listener needs Authorization: Bearer <admin_token>",
                              extra: [("WWW-Authenticate", "Bearer realm=\"airlock-admin\"")])
        }
        let (path, query) = Self.splitQuery(target)
        switch path {
        case "/rejects", "/healthz", "/readyz", "/metrics", "/upstreams": break
        default: return Self.error(404, "not-found", "no such admin resource: \(path) (try /rejects, /healthz, /readyz, /metrics or /upstreams)")
        }
        guard head.method == .get else {
            return Self.error(405, "method-not-allowed", "\(head.method.name) is not allowed; use GET",
                              extra: [("Allow", "GET")])
        }
        if path == "/metrics", let metrics {
            return Self.response(200, body: metrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        if path == "/upstreams", let reachability { return Self.response(200, body: reachability.json()) }
        if path == "/healthz" { return Self.response(200, body: Array("{\"status\":\"ok\"}\n".utf8)) }
        if path == "/readyz" {
            return isReady() ? Self.response(200, body: Array("{\"status\":\"ready\"}\n".utf8))
                : Self.error(503, "draining", "the gateway is shutting down and takes no new connections")
        }

        var since: Int64?
        var route: String?
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
            default:
                return Self.error(400, "bad-query", "unknown query parameter \"\(key)\" (since, route)")
            }
        }
        var e = JSONLineEncoder()
        e.append("{\"rejects\":[")
        for (i, record) in rejects.records(sinceUnixMillis: since, route: route).enumerated() {
            if i > 0 { e.append(",\n") }
            record.appendJSON(to: &e)
        }
        e.append("]}\n")
        return Self.response(200, body: e.bytes)
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

/// One admin client: reads a request head, answers, closes after the answer is flushed.
private final class AdminConnection: StreamDelegate {
    let stream: Stream
    private unowned let server: AdminServer
    private var scanner = HeadScanner(kind: .request, limits: AdminServer.wireLimits)
    private var answered = false

    init(loop: EventLoop, fd: Int32, server: AdminServer) {
        self.server = server
        stream = Stream(loop: loop, fd: fd)
        stream.delegate = self
        stream.setReadHighWatermark(AdminServer.wireLimits.headerBytes + 4)
        stream.setTimeouts(read: AdminServer.timeout, write: AdminServer.timeout)
    }

    func streamReadable(_ s: Stream) {
        guard !answered else { return }
        let answer: [UInt8]
        do throws(WireError) {
            guard let n = try stream.withInput(max: AdminServer.wireLimits.headerBytes + 2, { buf throws(WireError) in
                try scanner.scan(buf)
            }) else { return }
            let head = try stream.withInput(max: n) { buf throws(WireError) in
                try RequestParser.parse(buf, limits: AdminServer.wireLimits)
            }
            answer = server.respond(to: head)
        } catch {
            answer = AdminServer.error(error.status, error.reason, error.detail)
        }
        answered = true
        stream.write(answer)
        let server = self.server
        stream.closeAfterFlush { [self] in server.finished(self) }
    }

    func streamWritable(_ s: Stream) {}

    func stream(_ s: Stream, event: StreamEvent) {
        stream.close()
        server.finished(self)
    }
}
