import AirlockTesting
import Foundation
import XCTest

/// `connect: intercept` end to end, with real clients and real TLS on both legs: curl, headless Chromium, Python
/// `requests` and Node's `tls` through Airlock's CONNECT to a TLS origin; the certificate they
/// see is minted by Airlock's CA (made by `airlock ca init` for the test) while Airlock checks the
/// origin's chain under the route's policy; pinning and response validation inside the TLS
/// session; keep-alive and pipelining inside it; 50 MiB each way; a slow reader; garbage instead
/// of a ClientHello; a handshake that never comes; a request for another host.
final class InterceptTests: XCTestCase {
    private var pki: TLSTestPKI!
    private var caDir = ""
    private var airlocks: [AirlockProcess] = []
    private var origins: [TLSTestOrigin] = []

    override func setUpWithError() throws {
        pki = try TLSTestPKI.generate()
        caDir = NSTemporaryDirectory() + "airlock-intercept-\(UUID().uuidString)"
        let r = try runProcess(AirlockProcess.builtExecutable(), ["ca", "init", "--dir", caDir])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
    }

    override func tearDown() {
        for a in airlocks { a.stop() }
        for o in origins { o.stop() }
        airlocks = []
        origins = []
        pki?.remove()
        try? FileManager.default.removeItem(atPath: caDir)
    }

    private var caPEM: String { caDir + "/airlock-ca.pem" }

    private func origin() throws -> TLSTestOrigin {
        let o = try TLSTestOrigin(pki: pki)
        origins.append(o)
        return o
    }

    /// A one-worker gateway whose route `api` intercepts CONNECTs to localhost:<origin> and
    /// trusts the test PKI's root for the upstream leg; `security` and `extra` lines are added
    /// to the route; `host` is what the route matches.
    private func gateway(_ o: TLSTestOrigin, host: String = "localhost", security: [String] = [], extra: [String] = [],
                         limits: [String: String] = [:]) throws -> AirlockProcess {
        let sec = (["ca: \"\(pki.path("root.pem"))\""] + security).map { "      " + $0 }.joined(separator: "\n")
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML(limits))
            ca:
              certificate: "\(caPEM)"
              key: "\(caDir)/airlock-ca.key"
            routes:
              - name: api
                match: { host: "\(host)" }
                connect: intercept
                connect_ports: [\(o.port)]
                upstream: origin
                security:
            \(sec)
            \(extra.map { "    " + $0 }.joined(separator: "\n"))
            """)
        airlocks.append(a)
        return a
    }

    private func curl(_ a: AirlockProcess, _ url: String, _ more: [String] = [], timeout: Double = 30) throws -> ProcessResult {
        try Curl.run(["-x", "http://127.0.0.1:\(a.port)", "--cacert", caPEM] + more + [url], timeout: timeout)
    }

    // MARK: real clients

    func testCurlSeesACertificateFromAirlocksCAAndTheOriginAnswers() throws {
        let o = try origin()
        let a = try gateway(o)
        let r = try curl(a, o.url("/inside/tls?x=1"), ["-v"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "hello over tls /inside/tls?x=1", "byte-exact, from the origin")
        XCTAssertTrue(r.stderr.contains("HTTP/1.1 200 Connection established"), r.stderr)
        let issuer = r.stderr.split(separator: "\n").first { $0.contains("issuer:") }.map(String.init) ?? ""
        XCTAssertTrue(issuer.contains("Airlock Local CA"), "a minted leaf, not the origin's: \(issuer)")
        let subject = r.stderr.split(separator: "\n").first { $0.contains("subject:") }.map(String.init) ?? ""
        XCTAssertTrue(subject.contains("CN=localhost"), subject)
        XCTAssertEqual(o.requestLines, ["GET /inside/tls?x=1 HTTP/1.1"], "the request went upstream re-serialized, over TLS")
        XCTAssertEqual(o.serverNames.first ?? nil, "localhost", "TLS origination with SNI")
        // Only Airlock's CA is trusted by this curl: the origin's own chain would fail it.
        let direct = try Curl.run(["--cacert", caPEM, o.url("/direct")])
        XCTAssertEqual(direct.exitCode, 60, "the origin's chain is not under Airlock's CA: \(direct.stderr)")
        let connect = Fixture.accessRecords(a, count: 1) { $0["method"] as? String == "CONNECT" }
        XCTAssertEqual(connect.first?["tunnel"] as? String, "intercepted")
        XCTAssertEqual(connect.first?["route"] as? String, "api")
        XCTAssertEqual(connect.first?["target"] as? String, "localhost:\(o.port)")
        let get = Fixture.accessRecords(a, count: 1) { $0["method"] as? String == "GET" }
        XCTAssertEqual(get.first?["status"] as? Int, 200)
        XCTAssertEqual(get.first?["route"] as? String, "api")
        XCTAssertEqual(get.first?["target"] as? String, "/inside/tls?x=1")
        XCTAssertEqual(get.first?["intercepted"] as? Bool, true, "requests inside say where they came from")
        XCTAssertNil(connect.first?["intercepted"], "the CONNECT itself says it with its tunnel field")
    }

    func testPythonRequestsWithRequestsCABundle() throws {
        try Requirement.check(TLSFixtureScripts.canImport("requests"),
                              "\(TLSFixtureScripts.python()) cannot import requests (make test-setup)")
        let o = try origin()
        let a = try gateway(o)
        let script = """
            import requests, sys
            proxy = "http://127.0.0.1:\(a.port)"
            r = requests.get("\(o.url("/from/python"))", proxies={"https": proxy}, timeout=20)
            sys.stdout.write(f"{r.status_code} {r.text}")
            """
        let r = try runProcess("/usr/bin/env", ["REQUESTS_CA_BUNDLE=\(caPEM)", TLSFixtureScripts.python(), "-c", script],
                               timeout: 40)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "200 hello over tls /from/python")
        // Without the bundle, requests refuses Airlock's certificate: the check is real.
        let refused = try runProcess("/usr/bin/env", ["REQUESTS_CA_BUNDLE=\(pki.path("root.pem"))", TLSFixtureScripts.python(),
                                                      "-c", script], timeout: 40)
        XCTAssertNotEqual(refused.exitCode, 0, refused.stdoutString)
        XCTAssertTrue(refused.stderr.contains("CERTIFICATE_VERIFY_FAILED"), refused.stderr)
    }

    func testNodeHTTPSOverAConnectSocketWithNodeExtraCACerts() throws {
        try Requirement.check(["/usr/bin/node", "/usr/local/bin/node"].contains { FileManager.default.isExecutableFile(atPath: $0) },
                              "no node (make test-setup installs nodejs)")
        let o = try origin()
        let a = try gateway(o)
        // Node's https has no proxy support of its own: a proxy agent's work, by hand — CONNECT
        // over http, then https.request over that socket (what https-proxy-agent does).
        let script = """
            const http = require("http"), https = require("https");
            const req = http.request({ host: "127.0.0.1", port: \(a.port), method: "CONNECT", path: "localhost:\(o.port)" });
            req.on("connect", (res, socket) => {
              if (res.statusCode !== 200) { console.error("CONNECT " + res.statusCode); process.exit(2); }
              https.get({ host: "localhost", port: \(o.port), path: "/from/node", socket, agent: false, servername: "localhost" }, (r) => {
                let body = ""; r.on("data", (d) => body += d);
                r.on("end", () => { process.stdout.write(r.statusCode + " " + body); socket.destroy(); });
              }).on("error", (e) => { console.error(e.message); process.exit(3); });
            });
            req.on("error", (e) => { console.error(e.message); process.exit(4); });
            req.end();
            setTimeout(() => { console.error("timeout"); process.exit(5); }, 20000).unref();
            """
        let r = try runProcess("/usr/bin/env", ["NODE_EXTRA_CA_CERTS=\(caPEM)", "node", "-e", script], timeout: 40)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "200 hello over tls /from/node")
        let refused = try runProcess("/usr/bin/env", ["node", "-e", script], timeout: 40)
        XCTAssertEqual(refused.exitCode, 3, "without NODE_EXTRA_CA_CERTS: \(refused.stderr)")
    }

    /// Chromium's own verifier enforces RFC 5280 4.2.1.6 (a leaf with an empty subject needs a
    /// critical subjectAltName), which OpenSSL's does not: a page at an IP address, intercepted,
    /// loads with Airlock's CA trusted through an NSS database.
    func testChromiumLoadsAnInterceptedPageAtAnIPAddress() throws {
        let o = try origin()
        let a = try gateway(o, host: "127.0.0.1")
        let r = try Chromium.dumpDOM("https://127.0.0.1:\(o.port)/from/chromium", proxyPort: a.port, trusting: [caPEM])
        XCTAssertTrue(r.stdoutString.contains("hello over tls /from/chromium"),
                      "stdout: \(r.stdoutString.prefix(2_000))\nstderr: \(r.stderr.split(separator: "\n").filter { !$0.contains("dbus") }.suffix(30).joined(separator: "\n"))")
        XCTAssertTrue(o.requestLines.contains("GET /from/chromium HTTP/1.1"), "\(o.requestLines)")
        // (Chromium's own CONNECTs elsewhere, if any, match no route.)
        let connect = Fixture.accessRecords(a, count: 1) { $0["target"] as? String == "127.0.0.1:\(o.port)" }.first
        XCTAssertEqual(connect?["method"] as? String, "CONNECT")
        XCTAssertEqual(connect?["tunnel"] as? String, "intercepted")
    }

    // MARK: the route's policy, inside the TLS session

    func testWrongPinIs502UntrustedUpstreamInsideTLSWithTheRejectRecord() throws {
        let o = try origin()
        let a = try gateway(o, security: ["pinning: public-key", "pins: [\"\(pki.pin("other-root"))\"]"])
        let r = try curl(a, o.url("/pinned"), ["-w", "\\n%{http_code}"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        let lines = r.stdoutString.split(separator: "\n")
        XCTAssertEqual(lines.last, "502", r.stdoutString)
        let body = Fixture.json(Array(lines.first.map { Array($0.utf8) } ?? []))
        XCTAssertEqual(body["error"] as? String, "untrusted-upstream", r.stdoutString)
        XCTAssertEqual(body["reason"] as? String, "pin-mismatch", r.stdoutString)
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "upstream.rejected" }
        XCTAssertEqual(record?["route"] as? String, "api")
        let presented = record?["presented_pins"] as? [String] ?? []
        XCTAssertTrue(presented.contains(pki.pin("leaf")) && presented.contains(pki.pin("intermediate")),
                      "the presented chain's pins: \(presented)")
        XCTAssertTrue(o.receivesNoRequest(), "a rejected upstream got a request: \(o.requestLines)")
        XCTAssertTrue(o.requestLines.isEmpty, "a rejected upstream got no request")
    }

    func testJSONSerializerRejectsAnHTMLAnswerInsideTLS() throws {
        let o = try origin()
        let a = try gateway(o, extra: ["response: { serializer: json }"])
        let r = try curl(a, o.url("/html"), ["-w", "\\n%{http_code}"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        let lines = r.stdoutString.split(separator: "\n")
        XCTAssertEqual(lines.last, "502", r.stdoutString)
        XCTAssertEqual(Fixture.json(Array(lines.first.map { Array($0.utf8) } ?? []))["error"] as? String, "rejected-response")
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "response.rejected" }
        XCTAssertEqual(record?["route"] as? String, "api")
        XCTAssertEqual(record?["status"] as? Int, 200)
        XCTAssertEqual(o.requestLines, ["GET /html HTTP/1.1"])
    }

    func testARequestNamingAnotherHostIs421() throws {
        let o = try origin()
        let a = try gateway(o)
        let r = try curl(a, o.url("/other"), ["-H", "Host: elsewhere.test", "-w", "\\n%{http_code}"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertTrue(r.stdoutString.hasSuffix("\n421"), r.stdoutString)
        XCTAssertTrue(r.stdoutString.contains("\"error\":\"misdirected-request\""), r.stdoutString)
        XCTAssertTrue(o.receivesNoRequest(), "nothing reached the origin: \(o.requestLines)")
        XCTAssertTrue(o.requestLines.isEmpty, "nothing reached the origin")
        let record = Fixture.accessRecords(a, count: 1) { $0["status"] as? Int == 421 }.first
        XCTAssertEqual(record?["intercepted"] as? Bool, true, "an answer Airlock gave inside the TLS session is marked too")
    }

    // MARK: keep-alive and pipelining inside the TLS session

    func testPipelinedRequestsInsideOneSessionAreAnsweredInOrderOverOneUpstreamConnection() throws {
        let o = try origin()
        let a = try gateway(o)
        let script = """
            import socket, ssl, sys
            s = socket.create_connection(("127.0.0.1", \(a.port)), timeout=20)
            s.sendall(b"CONNECT localhost:\(o.port) HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\n\\r\\n")
            head = b""
            while not head.endswith(b"\\r\\n\\r\\n"): head += s.recv(1)
            assert head == b"HTTP/1.1 200 Connection established\\r\\n\\r\\n", head
            ctx = ssl.create_default_context(cafile="\(caPEM)")
            t = ctx.wrap_socket(s, server_hostname="localhost")
            reqs = b"".join(b"GET /p%d HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\n\\r\\n" % i for i in range(5))
            t.sendall(reqs)
            data = b""
            while data.count(b"hello over tls") < 5:
                chunk = t.recv(65536)
                if not chunk: break
                data += chunk
            # later, on the same session (keep-alive)
            t.sendall(b"GET /later HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\nConnection: close\\r\\n\\r\\n")
            while True:
                chunk = t.recv(65536)
                if not chunk: break
                data += chunk
            sys.stdout.write(data.decode())
            """
        let r = try runProcess(TLSFixtureScripts.python(), ["-c", script], timeout: 40)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        let bodies = r.stdoutString.components(separatedBy: "hello over tls ").dropFirst().map { $0.prefix { $0 != "H" } }
        XCTAssertEqual(bodies, ["/p0", "/p1", "/p2", "/p3", "/p4", "/later"], r.stdoutString)
        XCTAssertEqual(r.stdoutString.components(separatedBy: "HTTP/1.1 200 OK").count - 1, 6)
        XCTAssertEqual(o.requestLines.count, 6)
        XCTAssertEqual(o.acceptedConnections, 1, "one pooled upstream connection served the whole session")
        XCTAssertEqual(Fixture.accessRecords(a, count: 1) { $0["method"] as? String == "CONNECT" }.count, 1)
    }

    /// The CONNECT's access record is the session's: written when the client connection ends
    /// (after the records of the requests inside), with the TLS bytes both ways over the
    /// client connection and the session's duration, not the handshake's.
    func testTheInterceptedConnectRecordCarriesTheSessionsTotalsAndDuration() throws {
        let o = try origin()
        let a = try gateway(o)
        let size = 300_000
        // Two requests a second apart on one session; the second closes it.
        let script = """
            import socket, ssl, sys, time
            s = socket.create_connection(("127.0.0.1", \(a.port)), timeout=20)
            s.sendall(b"CONNECT localhost:\(o.port) HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\n\\r\\n")
            head = b""
            while not head.endswith(b"\\r\\n\\r\\n"): head += s.recv(1)
            assert head == b"HTTP/1.1 200 Connection established\\r\\n\\r\\n", head
            t = ssl.create_default_context(cafile="\(caPEM)").wrap_socket(s, server_hostname="localhost")
            t.sendall(b"GET /first HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\n\\r\\n")
            data = b""
            while b"hello over tls /first" not in data: data += t.recv(65536)
            time.sleep(1)
            t.sendall(b"GET /random/\(size) HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\nConnection: close\\r\\n\\r\\n")
            n = 0
            while True:
                chunk = t.recv(65536)
                if not chunk: break
                n += len(chunk)
            sys.stdout.write(str(n))
            """
        let r = try runProcess(TLSFixtureScripts.python(), ["-c", script], timeout: 40)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertGreaterThan(Int(r.stdoutString) ?? 0, size, "the second response, head and body")
        let connect = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["method"] as? String == "CONNECT" }.first)
        XCTAssertEqual(connect["tunnel"] as? String, "intercepted")
        XCTAssertNil(connect["incomplete"], "a session that ended normally")
        let bytesOut = connect["bytes_out"] as? Int ?? 0
        let bytesIn = connect["bytes_in"] as? Int ?? 0
        XCTAssertGreaterThan(bytesOut, size, "the session's TLS bytes to the client: \(connect)")
        XCTAssertLessThan(bytesOut, size + 64 * 1024, "TLS framing, heads and the handshake, not more: \(connect)")
        XCTAssertGreaterThan(bytesIn, 200, "the ClientHello and two request heads, encrypted: \(connect)")
        XCTAssertLessThan(bytesIn, 8 * 1024, "\(connect)")
        XCTAssertGreaterThanOrEqual(connect["duration_ms"] as? Double ?? 0, 1000, "the session lasted over a second: \(connect)")
        // Written when the session ended, so after the records of the requests inside it.
        let order = a.logRecords().filter { $0["event"] as? String == "request.access" }.compactMap { $0["method"] as? String }
        XCTAssertEqual(order, ["GET", "GET", "CONNECT"])
    }

    // MARK: bulk

    func testFiftyMiBEachWayThroughInterception() throws {
        let o = try origin()
        let a = try gateway(o)
        let size = 50 * 1024 * 1024
        let file = Fixture.tempFile("intercept-50m")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let down = try curl(a, o.url("/random/\(size)"), ["-o", file], timeout: 120)
        XCTAssertEqual(down.exitCode, 0, down.stderr)
        let got = try XCTUnwrap(FileManager.default.contents(atPath: file))
        XCTAssertEqual(got.count, size)
        XCTAssertEqual(try sha256Hex(Array(got)), o.sentBodies.first?.sha256)

        let upload = patternBytes(count: size, offset: 3)
        try Data(upload).write(to: URL(fileURLWithPath: file))
        let up = try curl(a, o.url("/upload"), ["--data-binary", "@" + file, "-H", "Content-Type: application/octet-stream",
                                                "-w", "\n%{http_code}"], timeout: 120)
        XCTAssertEqual(up.exitCode, 0, up.stderr)
        XCTAssertEqual(up.stdoutString, "hello over tls /upload\n200")
        XCTAssertTrue(o.waitForBodies(1, timeout: 10))
        XCTAssertEqual(o.requestBodies.first?.bytes, size)
        XCTAssertEqual(o.requestBodies.first?.sha256, try sha256Hex(upload))
    }

    /// A client that reads slowly: Airlock holds the upstream instead of buffering the body.
    /// Memory is read while curl is still connected and reading, as the tunnel and gateway
    /// versions do: once a client is gone, what Airlock buffered for it may be gone too.
    func testSlowReaderKeepsMemoryFlat() throws {
        let o = try origin()
        let a = try gateway(o)
        _ = try curl(a, o.url("/warm"))
        let before = try a.readResidentMemoryKiB()
        // 48 MiB at 2 MiB/s takes curl about 24 s; measured once 6 MiB have arrived, while the rest waits upstream.
        let file = Fixture.tempFile("intercept-slow")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: Curl.executable)
        slow.arguments = ["-q", "--silent", "--show-error", "--max-time", "60", "-x", "http://127.0.0.1:\(a.port)",
                          "--cacert", caPEM, "--limit-rate", "2M", "-o", file, o.url("/random/\(48 * 1024 * 1024)")]
        slow.environment = ProcessInfo.processInfo.environment.filter { !$0.key.lowercased().hasSuffix("_proxy") }
        try slow.run()
        defer {
            if slow.isRunning { slow.terminate() }
            slow.waitUntilExit()
        }
        func received() -> Int { (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0 }
        let deadline = Date().addingTimeInterval(30)
        while received() < 6 * 1024 * 1024 && slow.isRunning && Date() < deadline { usleep(20_000) }
        XCTAssertGreaterThanOrEqual(received(), 6 * 1024 * 1024, "curl read through the interception")
        let after = try a.readResidentMemoryKiB()
        XCTAssertTrue(slow.isRunning, "curl was still connected and reading when memory was read")
        XCTAssertLessThan(received(), 48 * 1024 * 1024, "and had not read the whole body")
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB for a slow reader")
    }

    // MARK: handshakes that fail

    func testGarbageInsteadOfAClientHelloIsClosedCleanlyAndLogged() throws {
        let o = try origin()
        let a = try gateway(o)
        // Python tells a clean close (FIN: recv returns b"") from a reset (ConnectionResetError).
        let script = """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", \(a.port)), timeout=10)
            s.sendall(b"CONNECT localhost:\(o.port) HTTP/1.1\\r\\nHost: localhost:\(o.port)\\r\\n\\r\\n")
            head = b""
            while not head.endswith(b"\\r\\n\\r\\n"): head += s.recv(1)
            assert head == b"HTTP/1.1 200 Connection established\\r\\n\\r\\n", head
            s.sendall(b"GET / HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n" + b"x" * 3000)
            try:
                rest = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    rest += chunk
                sys.stdout.write(f"eof {len(rest)}")
            except ConnectionResetError:
                sys.stdout.write("reset")
            except socket.timeout:
                sys.stdout.write("timeout")
            """
        let r = try runProcess(TLSFixtureScripts.python(), ["-c", script], timeout: 30)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "eof 0", "closed with a FIN and nothing else")
        let failed = a.waitForLog(timeout: 5) { $0["event"] as? String == "connect.tls-failed" }
        XCTAssertEqual(failed?["route"] as? String, "api")
        XCTAssertTrue((failed?["reason"] as? String ?? "").contains("http request"), "\(failed ?? [:])")
        let record = Fixture.accessRecords(a, count: 1) { $0["tunnel"] as? String == "tls-failed" }.first
        XCTAssertEqual(record?["incomplete"] as? Bool, true)
        XCTAssertEqual(o.acceptedConnections, 0, "no upstream connection for a failed interception")
        // The worker goes on.
        XCTAssertEqual(try curl(a, o.url("/after")).stdoutString, "hello over tls /after")
    }

    /// A CA made with `--permit example.test` never mints for another name: the handshake for
    /// localhost fails with the reason logged, and nothing reaches the origin.
    func testACAWithNameConstraintsInterceptsNothingElse() throws {
        let o = try origin()
        let made = try runProcess(AirlockProcess.builtExecutable(), ["ca", "init", "--dir", caDir, "--force", "--permit", "example.test"])
        XCTAssertEqual(made.exitCode, 0, made.stderr)
        XCTAssertTrue(made.stdoutString.contains("permits: DNS:example.test"), made.stdoutString)
        let a = try gateway(o)
        let r = try curl(a, o.url("/constrained"))
        XCTAssertNotEqual(r.exitCode, 0, "no certificate for localhost from this CA: \(r.stdoutString)")
        let failed = a.waitForLog(timeout: 5) { $0["event"] as? String == "connect.tls-failed" }
        XCTAssertTrue((failed?["reason"] as? String ?? "").contains("do not permit localhost"), "\(failed ?? [:])")
        XCTAssertTrue(o.receivesNoRequest(), "nothing reached the origin: \(o.requestLines)")
        XCTAssertTrue(o.requestLines.isEmpty)
    }

    func testAHandshakeThatNeverComesIsCutAtTheHeaderTimeout() throws {
        let o = try origin()
        let a = try gateway(o, limits: ["header_timeout": "1s"])
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        try c.write(Array("CONNECT localhost:\(o.port) HTTP/1.1\r\nHost: localhost:\(o.port)\r\n\r\n".utf8))
        _ = try c.read(through: "\r\n\r\n", timeout: 10)
        let started = Date()
        XCTAssertTrue(try c.readToEnd(timeout: 10).isEmpty)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "closed by header_timeout, not the idle timeout")
        let failed = a.waitForLog(timeout: 5) { $0["event"] as? String == "connect.tls-failed" }
        XCTAssertTrue((failed?["reason"] as? String ?? "").contains("header_timeout"), "\(failed ?? [:])")
    }
}
