import AirlockTesting
import Foundation
import XCTest

/// Airlock as a gateway for named upstreams: routing, strictness at the edge, upstream
/// failures, backpressure and shutdown.
final class GatewayTests: XCTestCase {
    var origins: [TestOrigin] = []
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        for o in origins { o.stop() }
    }

    private func origin(_ b: TestOrigin.Behavior) throws -> TestOrigin {
        let o = try TestOrigin(b)
        origins.append(o)
        return o
    }

    private func start(_ yaml: String) throws -> AirlockProcess {
        let a = try Fixture.start(yaml)
        airlock = a
        return a
    }

    /// A gateway in front of `o`, and a client that sent `requests` and then half-closed.
    private func halfClosedClient(of o: TestOrigin, after requests: String) throws -> RawClient {
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let c = try RawClient(port: a.port)
        try c.send(requests)
        c.shutdownWrite()
        return c
    }

    func testRoutesByHostAndPathPrefix() throws {
        let api = try origin(.respond { _ in .ok("api") })
        let v2 = try origin(.respond { _ in .ok("v2") })
        let yaml = """
        listen: 127.0.0.1:0
        workers: 1
        routes:
          - name: v2
            match: { host: api.example.test, path_prefix: /v2/ }
            upstream: http://127.0.0.1:\(v2.port)
          - name: api
            match: { host: "*.example.test" }
            upstream: http://127.0.0.1:\(api.port)
        """
        let a = try start(yaml)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r1 = try c.exchange("GET /v2/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
        XCTAssertEqual(String(decoding: r1.body, as: UTF8.self), "v2")
        let r2 = try c.exchange("GET /v1/x HTTP/1.1\r\nHost: API.example.test:8080\r\n\r\n")
        XCTAssertEqual(String(decoding: r2.body, as: UTF8.self), "api")
        XCTAssertEqual(api.requests.first?.header("Host"), "127.0.0.1:\(api.port)", "Host is the upstream authority")
        let r3 = try c.exchange("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
        XCTAssertEqual(r3.status, 403)
        let body = Fixture.json(r3.body)
        XCTAssertEqual(body["error"] as? String, "no-route")
        XCTAssertTrue((body["message"] as? String ?? "").contains("other.test"))
    }

    func testUpstreamSilentIs504() throws {
        let silent = try origin(.silent)
        let a = try start(Fixture.gatewayConfig(upstreamPort: silent.port, limits: ["upstream_timeout": "1s"]))
        _ = a
        let r = try Curl.run(["http://127.0.0.1:\(a.port)/slow", "-w", "\\n%{http_code}"], timeout: 20)
        XCTAssertTrue(r.stdoutString.hasSuffix("504"), r.stdoutString)
        XCTAssertEqual(Fixture.json(Array(r.stdout.dropLast(4)))["error"] as? String, "upstream-timeout")
    }

    /// Each hostile request gets its status, the connection closes, and nothing reaches the upstream.
    func testHostileRequestsNeverReachUpstream() throws {
        let o = try origin(.respond { _ in .ok("should not happen") })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let cases: [(String, Int)] = [
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x1\r\nx\r\n0\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET http://u:p@a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
            ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET / HTTP/1.1\nHost: a\n\n", 400),
            ("GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: a\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "b", count: 70000))\r\n\r\n", 431),
            ("GET / HTTP/1.1\r\nHost: a\r\n" + String(repeating: "X-A: b\r\n", count: 101) + "\r\n", 431),
        ]
        for (raw, status) in cases {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send(raw)
            let r = try c.readResponse()
            XCTAssertEqual(r.status, status, raw.debugDescription)
            XCTAssertEqual(r.header("Content-Type"), "application/json")
            XCTAssertNotNil(Fixture.json(r.body)["request_id"], raw.debugDescription)
            XCTAssertTrue(c.isClosedByPeer(timeout: 5), "connection must close after \(raw.debugDescription)")
        }
        XCTAssertEqual(o.requests.count, 0, "nothing malformed ever reaches an upstream")
    }

    func testDeclaredBodyTooLargeIs413() throws {
        let o = try origin(.respond { _ in .ok("x") })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["body_bytes": "1000"]))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n")
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "body-too-large")
        XCTAssertEqual(o.requests.count, 0)
    }

    func testIdleKeepAliveClientIsClosedAfterIdleTimeout() throws {
        let o = try origin(.respond { _ in .ok("x") })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["idle_timeout": "1s"]))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        XCTAssertNil(r.header("Connection"), "kept alive after the exchange")
        XCTAssertTrue(c.isClosedByPeer(timeout: 5), "an idle keep-alive client is closed after idle_timeout")
    }

    func testUpstreamThatClosedAKeptConnectionGetsAFreshOne() throws {
        // The origin answers without "Connection: close" and then closes: the upstream
        // connection Airlock kept is seen closed and never used for the next request.
        let o = try origin(.raw { _ in Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8) })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        for _ in 0..<3 {
            let r = try c.exchange("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "ok")
            usleep(200_000)
        }
        XCTAssertEqual(o.acceptedConnections, 3, "each exchange needed a new upstream connection")
    }

    /// A client that half-closes after a complete request still gets its response
    /// (`printf 'GET ...' | nc -N`), then the connection closes.
    func testHalfClosedClientStillGetsItsResponse() throws {
        let o = try origin(.respond { _ in
            usleep(200_000)
            return .ok("late but delivered")
        })
        let c = try halfClosedClient(of: o, after: "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        defer { c.close() }
        let raw = try c.readUntilClose(timeout: 10)
        let text = String(decoding: raw, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200"), text)
        XCTAssertTrue(text.contains("Connection: close"), text)
        XCTAssertTrue(text.hasSuffix("late but delivered"), text)
    }

    /// Pipelined requests sent before a half-close are all answered, in order; only the
    /// last response says `Connection: close`, then the connection closes.
    func testHalfClosedClientGetsEveryPipelinedResponse() throws {
        let o = try origin(.respond { req in
            usleep(100_000)
            return .ok("answer to \(req.target)")
        })
        let c = try halfClosedClient(of: o, after: (1...3).map { "GET /\($0) HTTP/1.1\r\nHost: a\r\n\r\n" }.joined())
        defer { c.close() }
        var bodies: [String] = []
        var closeHeaders: [String?] = []
        for _ in 1...3 {
            let r = try c.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 200)
            bodies.append(String(decoding: r.body, as: UTF8.self))
            closeHeaders.append(r.header("Connection"))
        }
        XCTAssertEqual(bodies, ["answer to /1", "answer to /2", "answer to /3"])
        XCTAssertEqual(closeHeaders.last ?? nil, "close", "\(closeHeaders)")
        XCTAssertTrue(c.isClosedByPeer(timeout: 5), "closed once the last pipelined request is answered")
        XCTAssertEqual(o.requests.map(\.target), ["/1", "/2", "/3"])
    }

    /// A half-close in the middle of a head: that request can never complete, so it gets a
    /// 400 with a JSON error (the client can still read) and the connection closes.
    func testHalfCloseInsideARequestHeadIs400() throws {
        let o = try origin(.respond { _ in .ok("x") })
        let c = try halfClosedClient(of: o, after: "GET /ok HTTP/1.1\r\nHost: a\r\n\r\nGET /cut HTTP/1.1\r\nHost: a\r\n")
        defer { c.close() }
        let first = try c.readResponse(timeout: 10)
        XCTAssertEqual(first.status, 200)
        let second = try c.readResponse(timeout: 10)
        XCTAssertEqual(second.status, 400)
        XCTAssertEqual(Fixture.json(second.body)["error"] as? String, "bad-request")
        XCTAssertTrue(c.isClosedByPeer(timeout: 5))
        XCTAssertEqual(o.requests.map(\.target), ["/ok"], "the truncated request never reaches the origin")
    }

    /// A client that goes away with its request body unfinished aborts the exchange.
    func testClientAbortMidBodyAbortsTheExchange() throws {
        let o = try origin(.respond { _ in .ok("x") })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let c = try RawClient(port: a.port)
        try c.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nonly-some")
        c.close()
        let rec = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" }
        XCTAssertEqual(rec?["status"] as? Int, 499, "\(String(describing: rec))")
        XCTAssertEqual(rec?["incomplete"] as? Bool, true)
        let err = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" }
        XCTAssertEqual(err?["error"] as? String, "client-aborted", "\(String(describing: err))")
        XCTAssertEqual(err?["message"] as? String, "client closed the connection")
    }

    func testHeaderTimeoutIs408() throws {
        let o = try origin(.respond { _ in .ok("x") })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["header_timeout": "1s"]))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET / HTTP/1.1\r\nHost: a\r\n")
        let r = try c.readResponse(timeout: 10)
        XCTAssertEqual(r.status, 408)
        XCTAssertTrue(c.isClosedByPeer(timeout: 5))
    }

    func testMalformedUpstreamResponseIs502AndNotReused() throws {
        let o = try origin(.raw { req in
            req.target == "/bad"
                ? Array("HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
                : Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok".utf8)
        })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        for path in ["/bad", "/conflict"] {
            let r = try Curl.run(["http://127.0.0.1:\(a.port)\(path)", "-w", "\\n%{http_code}"])
            XCTAssertTrue(r.stdoutString.hasSuffix("502"), path + ": " + r.stdoutString)
            XCTAssertEqual(Fixture.json(Array(r.stdout.dropLast(4)))["error"] as? String, "upstream-malformed-response")
        }
        XCTAssertEqual(o.acceptedConnections, 2, "a connection that sent a malformed response is never reused")
    }

    /// An upstream head that never ends is refused as soon as it passes `header_bytes`: 502
    /// at once, not a wait for `upstream_timeout`.
    func testEndlessUpstreamHeadIs502AtOnce() throws {
        let line = "X-Filler: \(String(repeating: "a", count: 100))\r\n"
        let o = try origin(.raw { _ in Array(("HTTP/1.1 200 OK\r\n" + String(repeating: line, count: 2_000)).utf8) })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["upstream_timeout": "30s"]))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let started = Date()
        let r = try c.exchange("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(r.status, 502)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "upstream-malformed-response")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "answered long before the 30 s upstream timeout")
    }

    func testTruncatedUpstreamBodyIsNotComplete() throws {
        let o = try origin(.raw { req in
            req.target == "/chunked"
                ? Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n".utf8)
                : Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly-part".utf8)
        })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let r1 = try Curl.run(["http://127.0.0.1:\(a.port)/length"])
        XCTAssertEqual(r1.exitCode, 18, "curl must see a partial transfer: \(r1.stderr)")
        let r2 = try Curl.run(["http://127.0.0.1:\(a.port)/chunked"])
        XCTAssertNotEqual(r2.exitCode, 0, "a chunked body cut short must not look complete: \(r2.stdoutString)")
    }

    func testCloseDelimitedUpstreamBodyIsReframedAsChunked() throws {
        let o = try origin(.raw { _ in Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close".utf8) })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Transfer-Encoding"), "chunked")
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "until-close")
        // Still keep-alive towards the client.
        let r2 = try c.exchange("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(String(decoding: r2.body, as: UTF8.self), "until-close")
    }

    /// A client that reads slowly must not make Airlock buffer the body: memory stays flat
    /// while a 256 MiB body is only partly read.
    func testSlowReaderDoesNotGrowMemory() throws {
        let o = try origin(.respond { _ in TestResponse(status: 200, body: .pattern(count: 256 * 1024 * 1024)) })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let before = try a.readResidentMemoryKiB()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        c.setReceiveBuffer(64 * 1024)
        try c.send("GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        var got = 0
        let deadline = Date().addingTimeInterval(20)
        while got < 8 * 1024 * 1024 && Date() < deadline {
            got += try c.read(upTo: 64 * 1024, timeout: 5).count
            usleep(2_000)
        }
        XCTAssertGreaterThan(got, 1024 * 1024)
        sleep(1)
        let after = try a.readResidentMemoryKiB()
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB for a slow reader")
    }

    /// SIGTERM after SIGTERM (an operator's second, a supervisor's), until the process is gone:
    /// the drain is not cut short and the exit is 0 with `airlock.stopped` and every record
    /// written. A SIGTERM that came after the signal watcher was freed, while the last records
    /// were being written, killed the process (exit 143) and lost them (AccessLogTests saw it
    /// about once in 60 runs).
    func testRepeatedSigtermsStillEndInAnOrderlyExit() throws {
        let (a, c) = try requestInFlight(answeredAfter: 300_000)
        defer { c.close() }
        var status: Int32?
        let deadline = Date().addingTimeInterval(15)
        while status == nil && Date() < deadline {   // one every 0.2 ms until it exits
            a.signal(SIGTERM)
            status = a.waitForExit(timeout: 0.0002)
        }
        XCTAssertEqual(status, 0, "an orderly exit, not death by SIGTERM (143)")
        XCTAssertEqual(String(decoding: try c.readResponse(timeout: 5).body, as: UTF8.self), "finished")
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.stopped" })
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" && $0["target"] as? String == "/slow" })
    }

    /// Airlock with `GET /slow` in flight to an origin that answers "finished" after `delay`
    /// microseconds, and the client that sent it.
    private func requestInFlight(answeredAfter delay: UInt32) throws -> (AirlockProcess, RawClient) {
        let o = try origin(.respond { _ in
            usleep(delay)
            return .ok("finished")
        })
        let a = try start(Fixture.gatewayConfig(upstreamPort: o.port))
        let c = try RawClient(port: a.port)
        try c.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertTrue(o.waitForRequests(1, timeout: 5))
        return (a, c)
    }

    func testSigtermDrainsInFlightThenExitsZero() throws {
        let (a, c) = try requestInFlight(answeredAfter: 800_000)
        defer { c.close() }
        a.signal(SIGTERM)
        let r = try c.readResponse(timeout: 10)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "finished")
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertEqual(a.waitForExit(timeout: 15), 0)
        // No longer accepting.
        XCTAssertThrowsError(try RawClient(port: a.port).send("GET / HTTP/1.1\r\n\r\n"))
    }
}
