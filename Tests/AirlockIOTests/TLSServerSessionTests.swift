@testable import AirlockIO
import AirlockTesting
import Foundation
import XCTest

// Foundation (through XCTest) has its own Stream and StreamDelegate.
private typealias Stream = AirlockIO.Stream
private typealias StreamDelegate = AirlockIO.StreamDelegate
private typealias Timer = AirlockIO.Timer

/// The server role of TLS on accepted streams, against real clients (curl, openssl s_client,
/// Python's ssl): an `EventLoop` and a `Listener` on 127.0.0.1:0 accept, start server TLS
/// with leaves minted by a CA generated for the test, and answer one fixed HTTP/1.1
/// response to what they decrypt.
final class TLSServerSessionTests: XCTestCase {
    private var dir = ""
    private var ca: CertificateAuthority!
    private var context: TLSServerContext!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-tls-server-\(UUID().uuidString)").path
        ca = try CertificateAuthority.create(inDirectory: dir, overwrite: .refuse)
        context = try TLSServerContext(authority: ca)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    static let body = "hello over intercepted tls"

    /// An HTTPS server on the test's loop. `start` says when TLS starts on an accepted stream.
    private final class Server: StreamDelegate {
        enum Start {
            case onAccept          // at once: nothing read yet
            case insideFirstRead   // in the first read callback: the ClientHello is staged input
            case afterFirstRead    // 50 ms after the first read: the ClientHello sits in the input buffer
            case afterConnectHead  // after a CONNECT head: answer 200, then TLS on what follows it
        }

        final class Connection {
            let stream: Stream
            var started = false
            var request: [UInt8] = []
            init(_ s: Stream) { stream = s }
        }

        let loop: EventLoop
        let start: Start
        let context: TLSServerContext
        let fallbackName: String
        let readTimeout: Duration
        var listener: Listener!
        var connections: [Connection] = []
        var timers: [Timer] = []
        var events: [StreamEvent] = []
        var serverNames: [String?] = []
        var alpns: [String?] = []
        /// `inputLength` when TLS started, per connection.
        var prefixLengths: [Int] = []
        var requestLines: [String] = []

        init(loop: EventLoop, start: Start, context: TLSServerContext, fallbackName: String,
             readTimeout: Duration = .seconds(10)) throws {
            self.loop = loop
            self.start = start
            self.context = context
            self.fallbackName = fallbackName
            self.readTimeout = readTimeout
            listener = try Listener(loop: loop, host: "127.0.0.1", port: 0)
            listener.onAccept = { [unowned self] fd, _ in self.accept(fd) }
        }

        var port: UInt16 { listener.address.port }

        private func accept(_ fd: Int32) {
            let s = Stream(loop: loop, fd: fd)
            s.delegate = self
            s.setTimeouts(read: readTimeout, write: .seconds(10))
            let c = Connection(s)
            connections.append(c)
            if start == .onAccept { begin(c) }
        }

        private func begin(_ c: Connection) {
            c.started = true
            prefixLengths.append(c.stream.inputLength)
            c.stream.setReading(true)
            c.stream.startServerTLS(context, fallbackName: fallbackName)
        }

        private func connection(_ s: Stream) -> Connection? { connections.first { $0.stream === s } }

        func streamReadable(_ s: Stream) {
            guard let c = connection(s) else { return }
            if !c.started {
                switch start {
                case .onAccept: break
                case .insideFirstRead: begin(c)
                case .afterFirstRead:
                    s.setReading(false)
                    let t = Timer(loop: loop) { [unowned self] in self.begin(c) }
                    t.schedule(after: .milliseconds(50))
                    timers.append(t)
                case .afterConnectHead:
                    let input = s.withInput(max: s.inputLength) { Array($0) }
                    guard let end = input.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
                    let head = String(decoding: input[..<end.lowerBound], as: UTF8.self)
                    requestLines.append(String(head.split(separator: "\r\n").first ?? ""))
                    s.drainInput(end.upperBound)
                    s.write(Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8))
                    begin(c)
                }
                return
            }
            c.request += s.withInput(max: s.inputLength) { Array($0) }
            s.drainInput(s.inputLength)
            guard let end = c.request.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: c.request[..<end.lowerBound], as: UTF8.self)
            requestLines.append(String(head.split(separator: "\r\n").first ?? ""))
            s.write(Array("HTTP/1.1 200 OK\r\nContent-Length: \(TLSServerSessionTests.body.utf8.count)\r\nConnection: close\r\n\r\n\(TLSServerSessionTests.body)".utf8))
            s.closeAfterFlush()
        }

        func streamWritable(_ s: Stream) {}

        func stream(_ s: Stream, event: StreamEvent) {
            events.append(event)
            switch event {
            case .connected:
                serverNames.append(s.tlsServerName)
                alpns.append(s.tlsALPN)
            default:
                s.close()
            }
        }
    }

    /// A result one thread sets and another polls.
    private final class Box: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Result<ProcessResult, any Error>?
        func set(_ v: Result<ProcessResult, any Error>) { lock.withLock { value = v } }
        var result: Result<ProcessResult, any Error>? { lock.withLock { value } }
    }

    /// Runs `client` on another thread while the loop serves, until it returns (60 s at most),
    /// then a little longer so the server sees the connection's end.
    private func serve(_ loop: EventLoop, _ client: @escaping @Sendable () throws -> ProcessResult) throws -> ProcessResult {
        let box = Box()
        DispatchQueue.global().async { box.set(Result { try client() }) }
        let deadline = EventLoop.nowNanos() + 60_000_000_000
        while box.result == nil && EventLoop.nowNanos() < deadline {
            _ = loop.runOnce(blocking: false)
            usleep(200)
        }
        let settle = EventLoop.nowNanos() + 100_000_000
        while EventLoop.nowNanos() < settle { _ = loop.runOnce(blocking: false); usleep(200) }
        return try XCTUnwrap(box.result, "the client did not finish").get()
    }

    private func curl(_ args: [String]) throws -> ProcessResult {
        try Requirement.tool(Curl.executable)
        return try Curl.run(args, timeout: 20)
    }

    private static func openssl(_ args: [String]) throws -> ProcessResult {
        try Requirement.tool("/usr/bin/openssl")
        return try runProcess("/usr/bin/openssl", args, timeout: 20)
    }

    private static func python(_ script: String, _ args: [String], in dir: String) throws -> ProcessResult {
        let py = TLSFixtureScripts.python()
        try Requirement.tool(py)
        let path = dir + "/client-\(UUID().uuidString).py"
        try Data(script.utf8).write(to: URL(fileURLWithPath: path))
        return try runProcess(py, [path] + args, timeout: 20)
    }

    // MARK: tests

    func testCurlGetsTheAnswerOverALeafForLocalhostIssuedByTheCA() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "fallback.test")
        let caFile = ca.certificatePath, port = server.port
        let r = try serve(loop) {
            try Curl.run(["--cacert", caFile, "-w", "\n%{http_version}\n%{certs}", "https://localhost:\(port)/hello"], timeout: 20)
        }
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        let out = r.stdoutString
        XCTAssertTrue(out.hasPrefix(Self.body + "\n1.1\n"), out)
        XCTAssertTrue(out.contains("Subject:CN = localhost"), out)
        let caCN = try XCTUnwrap(ca.subject.split(separator: ",").first { $0.hasPrefix("CN=") }).dropFirst(3)
        XCTAssertTrue(out.contains("Issuer:O = Airlock, CN = \(caCN)"), out)
        XCTAssertTrue(out.contains("DNS:localhost"), out)
        XCTAssertEqual(server.events, [.connected])
        XCTAssertEqual(server.serverNames, ["localhost"])
        XCTAssertEqual(server.requestLines, ["GET /hello HTTP/1.1"])
    }

    func testClientOfferingH2AndHTTP11GetsHTTP11() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "fallback.test")
        let caFile = ca.certificatePath, port = server.port
        let r = try serve(loop) {
            try Curl.run(["--http2", "--cacert", caFile, "-w", "\n%{http_version}", "https://localhost:\(port)/h2"], timeout: 20)
        }
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, Self.body + "\n1.1")
        XCTAssertEqual(server.alpns, ["http/1.1"])
        // s_client: h2 alone gets no ALPN at all; h2,http/1.1 gets http/1.1.
        let only = try serve(loop) {
            try Self.openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-alpn", "h2"])
        }
        XCTAssertTrue(only.stdoutString.contains("No ALPN negotiated"), only.stdoutString + only.stderr)
        let both = try serve(loop) {
            try Self.openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-alpn", "h2,http/1.1"])
        }
        XCTAssertTrue(both.stdoutString.contains("ALPN protocol: http/1.1"), both.stdoutString + both.stderr)
        XCTAssertEqual(server.alpns, ["http/1.1", nil, "http/1.1"])
    }

    func testClientWithoutSNIGetsTheFallbackNamesLeaf() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "Fallback.Test")
        let caFile = ca.certificatePath, port = server.port
        let r = try serve(loop) {
            try Self.openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-noservername", "-CAfile", caFile,
                         "-verify_return_error", "-verify_hostname", "fallback.test"])
        }
        XCTAssertEqual(r.exitCode, 0, r.stdoutString + r.stderr)
        XCTAssertTrue(r.stdoutString.contains("subject=CN = fallback.test"), r.stdoutString)
        XCTAssertTrue(r.stdoutString.contains("Verify return code: 0 (ok)"), r.stdoutString)
        XCTAssertEqual(server.serverNames, [nil], "no SNI was sent")
        // curl sends no SNI to an IP literal: a fallback IP gets a leaf with an IP SAN.
        let ipServer = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "127.0.0.1")
        let ipPort = ipServer.port
        let ip = try serve(loop) { try Curl.run(["--cacert", caFile, "https://127.0.0.1:\(ipPort)/ip"], timeout: 20) }
        XCTAssertEqual(ip.exitCode, 0, ip.stderr)
        XCTAssertEqual(ip.stdoutString, Self.body)
        XCTAssertEqual(ipServer.serverNames, [nil])
    }

    func testClientHelloAlreadyInTheInputCompletesTheHandshake() throws {
        for start in [Server.Start.insideFirstRead, .afterFirstRead] {
            let loop = EventLoop(name: "test")
            let server = try Server(loop: loop, start: start, context: context, fallbackName: "fallback.test")
            let caFile = ca.certificatePath, port = server.port
            let r = try serve(loop) { try Curl.run(["--cacert", caFile, "https://localhost:\(port)/early"], timeout: 20) }
            XCTAssertEqual(r.exitCode, 0, "\(start): \(r.stderr)")
            XCTAssertEqual(r.stdoutString, Self.body, "\(start)")
            XCTAssertEqual(server.prefixLengths.count, 1, "\(start)")
            XCTAssertGreaterThan(server.prefixLengths.first ?? 0, 0, "\(start): the ClientHello was read before TLS started")
            XCTAssertEqual(server.serverNames, ["localhost"], "\(start)")
        }
    }

    /// A client that sends its ClientHello right behind the CONNECT head, before our 200.
    func testClientHelloBehindAConnectHeadInTheSameSegment() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .afterConnectHead, context: context, fallbackName: "intercepted.test")
        let caFile = ca.certificatePath, port = server.port, tmp = dir
        let r = try serve(loop) { try Self.python(Self.connectClient, [String(port), caFile], in: tmp) }
        XCTAssertEqual(r.exitCode, 0, r.stdoutString + r.stderr)
        let lines = r.stdoutString.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "HTTP/1.1 200 Connection Established", r.stdoutString)
        XCTAssertTrue(lines.contains { $0.hasPrefix("alpn http/1.1 cn intercepted.test") }, r.stdoutString)
        XCTAssertTrue(r.stdoutString.hasSuffix("close_notify\n" + Self.body + "\n"),
                      "the body, then close_notify before the TCP close: \(r.stdoutString)")
        XCTAssertEqual(server.requestLines.first, "CONNECT intercepted.test:443 HTTP/1.1")
        XCTAssertEqual(server.requestLines.last, "GET /via-connect HTTP/1.1")
        XCTAssertGreaterThan(server.prefixLengths.first ?? 0, 0, "the ClientHello arrived with the CONNECT head")
        XCTAssertEqual(server.serverNames, ["intercepted.test"])
    }

    func testGarbageInsteadOfAClientHelloFailsAndTheSocketCloses() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "fallback.test")
        let port = server.port, tmp = dir
        let r = try serve(loop) { try Self.python(Self.rawClient, [String(port), "GET / HTTP/1.1\r\nHost: x\r\n\r\n"], in: tmp) }
        XCTAssertEqual(r.exitCode, 0, r.stdoutString + r.stderr)
        XCTAssertTrue(r.stdoutString.hasPrefix("closed"), r.stdoutString)
        XCTAssertEqual(server.events.count, 1, "\(server.events)")
        guard case .tlsFailed(let why)? = server.events.first else { return XCTFail("\(server.events)") }
        XCTAssertFalse(why.isEmpty)
    }

    func testSilentClientTimesOutTheHandshake() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "fallback.test",
                                readTimeout: .milliseconds(300))
        let port = server.port, tmp = dir
        let r = try serve(loop) { try Self.python(Self.rawClient, [String(port), ""], in: tmp) }
        XCTAssertEqual(r.exitCode, 0, r.stdoutString + r.stderr)
        XCTAssertTrue(r.stdoutString.hasPrefix("closed"), r.stdoutString)
        XCTAssertEqual(server.events, [.tlsFailed("handshake timed out")])
    }

    func testHostileSNIIsRefused() throws {
        let loop = EventLoop(name: "test")
        let server = try Server(loop: loop, start: .onAccept, context: context, fallbackName: "fallback.test")
        let port = server.port
        let r = try serve(loop) {
            try Self.openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "evil.test,DNS:bank.test"])
        }
        XCTAssertNotEqual(r.exitCode, 0, r.stdoutString)
        guard case .tlsFailed(let why)? = server.events.first else { return XCTFail("\(server.events)") }
        XCTAssertTrue(why.contains("client server name refused"), why)
        XCTAssertEqual(context.cachedLeafCount, 0, "nothing was minted")
    }

    // MARK: clients

    /// argv: port, payload. Connects, sends the payload (if any), reads until the server closes
    /// (10 s at most) and prints "closed <bytes received>" or "open".
    static let rawClient = """
        import socket, sys
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        if sys.argv[2]:
            s.sendall(sys.argv[2].encode())
        s.settimeout(10)
        got = 0
        try:
            while True:
                d = s.recv(4096)
                if not d:
                    print("closed", got)
                    break
                got += len(d)
        except ConnectionResetError:
            print("closed (reset)", got)
        except socket.timeout:
            print("open")
        """

    /// argv: port, CA file. Sends CONNECT and its ClientHello in one send, reads the 200,
    /// finishes the handshake (verifying the chain and the name), sends a GET, prints the body.
    static let connectClient = """
        import socket, ssl, sys
        ctx = ssl.create_default_context(cafile=sys.argv[2])
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ctx.wrap_bio(inc, out, server_hostname="intercepted.test")
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        s.settimeout(10)
        s.sendall(b"CONNECT intercepted.test:443 HTTP/1.1\\r\\nHost: intercepted.test:443\\r\\n\\r\\n" + out.read())
        buf = b""
        while b"\\r\\n\\r\\n" not in buf:
            d = s.recv(4096)
            if not d:
                sys.exit("EOF before the 200")
            buf += d
        head, rest = buf.split(b"\\r\\n\\r\\n", 1)
        print(head.split(b"\\r\\n")[0].decode())
        inc.write(rest)
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                s.sendall(out.read())
                d = s.recv(65536)
                if not d:
                    sys.exit("EOF during the handshake")
                inc.write(d)
        cn = dict(x[0] for x in tls.getpeercert()["subject"])["commonName"]
        print("alpn", tls.selected_alpn_protocol(), "cn", cn)
        tls.write(b"GET /via-connect HTTP/1.1\\r\\nHost: intercepted.test\\r\\n\\r\\n")
        s.sendall(out.read())
        resp = b""
        done = False
        while not done:
            d = s.recv(65536)
            if not d:
                break
            inc.write(d)
            while True:
                try:
                    chunk = tls.read(65536)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    print("close_notify")
                    done = True
                    break
                if not chunk:   # close_notify (CPython returns b"" once it was received)
                    print("close_notify")
                    done = True
                    break
                resp += chunk
        print(resp.split(b"\\r\\n\\r\\n", 1)[1].decode())
        """
}
