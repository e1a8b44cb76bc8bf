public import AirlockConfig
import AirlockIO
import AirlockWire
import Glibc

/// `airlock demo-upstream`: a small HTTP/1.1 origin for the README's walkthroughs, so they
/// run on a fresh machine with nothing to resolve. On the same `Listener`/`Stream` as the
/// admin listener: one request per connection, answered from a fixed set of documents,
/// the connection closed after the answer. Not a proxy and not configurable.
///
/// - `GET /` the list below (text)
/// - `GET /hello` a line of text (`text/plain`)
/// - `GET /json` a JSON document with a `null` (`application/json`)
/// - `GET /not-json` an HTML page labelled `text/html` (what a `json` route rejects)
/// - `GET /status/NNN` that status (200-599), a JSON body naming it
/// - `GET /bytes/N` N bytes (at most 16 MiB) of `application/octet-stream`
public final class DemoUpstream {
    let address: SocketAddress
    /// The port listened on (the one chosen when `listen` named port 0).
    public var port: UInt16 { address.port }
    private let loop: EventLoop
    private let listener: Listener
    private var connections: [ObjectIdentifier: DemoConnection] = [:]
    private var signals: SignalWatcher?

    static let wireLimits = WireLimits(requestLineBytes: 4096, headerBytes: 16384, headerCount: 64)
    static let timeout: Duration = .seconds(10)
    static let maxBytes = 16 * 1024 * 1024

    /// Binds at once, so a taken port fails the command before anything is printed.
    public init(listen: ListenAddress) throws {
        IORuntime.setUp()
        loop = EventLoop(name: "demo-upstream")
        listener = try Listener(loop: loop, host: listen.host, port: listen.port, backlog: 128)
        address = listener.address
        listener.onAccept = { [unowned self] fd, _ in
            let c = DemoConnection(loop: self.loop, fd: fd, origin: self)
            self.connections[ObjectIdentifier(c)] = c
        }
    }

    /// The one line written when listening, e.g.
    /// `{"event":"demo-upstream.listening","address":"127.0.0.1","port":8081,"url":"http://127.0.0.1:8081"}`.
    public var listeningRecord: String {
        var s = "{\"event\":\"demo-upstream.listening\",\"address\":"
        JSON.appendString(address.host, to: &s)
        s += ",\"port\":\(address.port),\"url\":"
        JSON.appendString("http://\(address)", to: &s)
        s += "}"
        return s
    }

    /// Prints the listening record, then serves until SIGTERM or SIGINT.
    public func run() {
        let line = Array((listeningRecord + "\n").utf8)
        _ = line.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }   // unbuffered: a pipe sees it now
        signals = SignalWatcher(loop: loop, signals: [SIGTERM, SIGINT]) { [unowned self] _ in
            self.listener.close()
            for c in Array(self.connections.values) { c.stream.close() }
            self.connections = [:]
            self.loop.stop()
        }
        loop.run()
        signals = nil
    }

    fileprivate func finished(_ c: DemoConnection) {
        connections.removeValue(forKey: ObjectIdentifier(c))
    }

    // MARK: documents

    static let index = """
        airlock demo-upstream: a local origin for the README's walkthroughs
        GET /hello         a line of text
        GET /json          a JSON document
        GET /not-json      an HTML page labelled text/html
        GET /status/NNN    that status (200-599)
        GET /bytes/N       N bytes (at most 16 MiB)

        """

    /// The whole answer to one request head.
    static func respond(to head: RequestHead) -> [UInt8] {
        let target: String
        switch head.target {
        case .origin(let p), .absolute(_, _, _, let p): target = p
        default: target = ""
        }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let withBody = head.method != .head
        guard head.method == .get || head.method == .head else {
            return response(405, text("\(head.method.name) is not served here; use GET\n"), withBody: withBody,
                            extra: [("Allow", "GET, HEAD")])
        }
        switch path {
        case "/":
            return response(200, text(index), withBody: withBody)
        case "/hello":
            return response(200, text("hello from airlock demo-upstream\n"), withBody: withBody)
        case "/json":
            let body = "{\"message\":\"hello from airlock demo-upstream\",\"items\":[1,2,3],\"note\":null}\n"
            return response(200, (Array(body.utf8), "application/json"), withBody: withBody)
        case "/not-json":
            let body = "<!doctype html>\n<html><body><h1>Not JSON</h1><p>an HTML page</p></body></html>\n"
            return response(200, (Array(body.utf8), "text/html; charset=utf-8"), withBody: withBody)
        default:
            break
        }
        if path.hasPrefix("/status/"), let code = Int(path.dropFirst("/status/".count)), (200...599).contains(code) {
            let bodyless = code == 204 || code == 304
            let body = bodyless ? ([UInt8](), "application/json") : (Array("{\"status\":\(code)}\n".utf8), "application/json")
            return response(code, body, withBody: withBody && !bodyless, framed: !bodyless)
        }
        if path.hasPrefix("/bytes/"), let n = Int(path.dropFirst("/bytes/".count)), (0...maxBytes).contains(n) {
            let body = (0..<n).map { UInt8(ascii: "a") &+ UInt8($0 % 26) }
            return response(200, (body, "application/octet-stream"), withBody: withBody)
        }
        return response(404, text("no such document: \(path) (GET / lists them)\n"), withBody: withBody)
    }

    private static func text(_ s: String) -> ([UInt8], String) {
        (Array(s.utf8), "text/plain; charset=utf-8")
    }

    private static func response(_ status: Int, _ body: ([UInt8], String), withBody: Bool, framed: Bool = true,
                                 extra: [(String, String)] = []) -> [UInt8] {
        var w = HeadWriter(capacity: 256)
        w.statusLine(status: status, reason: ReasonPhrase.standard(for: status))
        if framed {
            w.field(name: "Content-Type", value: body.1)
            w.field(name: "Content-Length", value: String(body.0.count))
        }
        for (name, value) in extra { w.field(name: name, value: value) }
        w.field(name: "Connection", value: "close")
        w.end()
        return withBody ? w.bytes + body.0 : w.bytes
    }
}

/// One client of the demo origin: reads a request head, answers, closes after the flush.
private final class DemoConnection: StreamDelegate {
    let stream: Stream
    private unowned let origin: DemoUpstream
    private var scanner = HeadScanner(kind: .request, limits: DemoUpstream.wireLimits)
    private var answered = false

    init(loop: EventLoop, fd: Int32, origin: DemoUpstream) {
        self.origin = origin
        stream = Stream(loop: loop, fd: fd)
        stream.delegate = self
        stream.setReadHighWatermark(DemoUpstream.wireLimits.headerBytes + 4)
        stream.setTimeouts(read: DemoUpstream.timeout, write: DemoUpstream.timeout)
    }

    func streamReadable(_ s: Stream) {
        guard !answered else {
            stream.drainInput(stream.inputLength)   // one request per connection
            return
        }
        let answer: [UInt8]
        do throws(WireError) {
            guard let head = try stream.readOneRequestHead(&scanner, limits: DemoUpstream.wireLimits) else { return }
            answer = DemoUpstream.respond(to: head)
        } catch {
            answer = Array("HTTP/1.1 \(error.status) \(ReasonPhrase.standard(for: error.status))\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        }
        answered = true
        stream.drainInput(stream.inputLength)
        stream.write(answer)
        stream.closeAfterFlush { [self] in origin.finished(self) }
    }

    func streamWritable(_ s: Stream) {}

    func stream(_ s: Stream, event: StreamEvent) {
        stream.close()
        origin.finished(self)
    }
}
