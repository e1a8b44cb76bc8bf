import AirlockTesting
import Foundation
import Synchronization
import XCTest

/// Reachability of fixed upstreams (`reachability.interval: 1s`): stopping the origin flips
/// `GET /upstreams` to unreachable and its requests to 503 upstream-unreachable with
/// Retry-After within one probe interval (plus scheduling slack); an origin restarted on the
/// same port is reachable again after the next probe, and requests go through.
final class ReachabilityIntegrationTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private func get(_ port: UInt16, _ path: String) throws -> RawResponse {
        let c = try RawClient(port: port)
        defer { c.close() }
        return try c.exchange("GET \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
    }

    private func upstreamState(_ admin: UInt16) throws -> [String: Any] {
        let r = try get(admin, "/upstreams")
        XCTAssertEqual(r.status, 200)
        let list = Fixture.json(r.body)["upstreams"] as? [[String: Any]] ?? []
        return list.first { $0["route"] as? String == "api" } ?? [:]
    }

    /// Polls `condition` every 50 ms until it holds or `seconds` pass; returns the time it took.
    private func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Double? {
        let start = Date()
        for _ in 0..<Int(seconds / 0.05) + 1 {
            if try condition() { return Date().timeIntervalSince(start) }
            if Date().timeIntervalSince(start) > seconds { break }
            usleep(50_000)
        }
        return nil
    }

    func testStoppedOriginIsUnreachableWithinOneIntervalAndRestartedOneRecovers() throws {
        // Below the ephemeral range: restarted on the same port later, which no outgoing
        // connection may have been given meanwhile.
        let o = try TestOrigin(.respond { _ in .ok("up") }, port: unusedLoopbackPort())
        origin = o
        let port = o.port
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: port) + "\nadmin: 127.0.0.1:0\nreachability: { interval: 1s }\n")
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let admin = UInt16(try XCTUnwrap(record["port"] as? Int))

        XCTAssertNotNil(try waitUntil(3) { try upstreamState(admin)["state"] as? String == "reachable" }, "the first probe")
        XCTAssertEqual(try get(a.port, "/before").status, 200)
        let pool = try XCTUnwrap(try upstreamState(admin)["pool"] as? [String: Any])
        XCTAssertNotNil(pool["idle"] as? Int)

        o.stop()
        // Within one probe interval (1 s; 0.8 s slack for a loaded machine), with no request
        // sent meanwhile (so only the probe can notice), the upstream is unreachable...
        XCTAssertNotNil(try waitUntil(1.8) { try upstreamState(admin)["state"] as? String == "unreachable" },
                        "the probe did not mark the stopped origin unreachable within one interval")
        // ...and its requests fail fast.
        let failFast = try get(a.port, "/during")
        XCTAssertEqual(failFast.status, 503)
        XCTAssertEqual(Fixture.json(failFast.body)["error"] as? String, "upstream-unreachable")
        XCTAssertEqual(failFast.header("Retry-After"), "1")
        let down = try upstreamState(admin)
        XCTAssertEqual(down["state"] as? String, "unreachable")
        XCTAssertNotNil(down["last_error"] as? String)
        XCTAssertGreaterThan(down["since"] as? Int ?? 0, 0)
        XCTAssertNotNil(a.waitForLog(timeout: 2) {
            $0["event"] as? String == "upstream.reachability" && $0["to"] as? String == "unreachable"
        })

        let back = try TestOrigin(.respond { _ in .ok("back") }, port: port)
        origin = back
        XCTAssertNotNil(try waitUntil(3) { try upstreamState(admin)["state"] as? String == "reachable" },
                        "a restarted origin is reachable after the next probe")
        let after = try get(a.port, "/after")
        XCTAssertEqual(after.status, 200)
        XCTAssertEqual(String(decoding: after.body, as: UTF8.self), "back")
        XCTAssertNotNil(a.waitForLog(timeout: 2) {
            $0["event"] as? String == "upstream.reachability" && $0["from"] as? String == "unreachable"
                && $0["to"] as? String == "reachable"
        })
    }

    /// An https upstream's probe is the TLS handshake judged by the route's security policy:
    /// trusted (test CA) → reachable; pinned to another key → unreachable ("untrusted: ...").
    /// Its requests do not fail fast with 503: each meets the real handshake and is refused as
    /// 502 untrusted-upstream (with its reject record), and nothing reaches the origin.
    func testHTTPSProbeAppliesTheRoutesSecurityPolicy() throws {
        let pki = try TLSTestPKI.generate()
        defer { pki.remove() }
        let o = try TLSTestOrigin(pki: pki)
        defer { o.stop() }
        func start(_ security: String) throws -> (AirlockProcess, UInt16) {
            let a = try Fixture.start("""
                listen: 127.0.0.1:0
                workers: 1
                admin: 127.0.0.1:0
                reachability: { interval: 1s }
                \(Fixture.limitsYAML([:]))
                routes:
                  - name: api
                    match: { host: "*" }
                    upstream: https://localhost:\(o.port)
                    security: { ca: "\(pki.path("root.pem"))"\(security) }
                """)
            let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
            return (a, UInt16(try XCTUnwrap(record["port"] as? Int)))
        }

        let (trusting, admin1) = try start("")
        defer { trusting.stop() }
        XCTAssertNotNil(try waitUntil(3) { try upstreamState(admin1)["state"] as? String == "reachable" },
                        "a trusted TLS upstream probes reachable")
        XCTAssertEqual(o.handshakeFailures, [], "the probe completes the handshake")
        trusting.stop()

        let requestsBefore = o.requestLines.count
        let (pinned, admin2) = try start(", pinning: public-key, pins: [\"\(pki.pin("other-leaf"))\"]")
        defer { pinned.stop() }
        XCTAssertNotNil(try waitUntil(3) { try upstreamState(admin2)["state"] as? String == "unreachable" },
                        "a TLS upstream failing the pin probes unreachable")
        XCTAssertTrue((try upstreamState(admin2)["last_error"] as? String ?? "").hasPrefix("untrusted"))
        let r = try get(pinned.port, "/pinned")
        XCTAssertEqual(r.status, 502)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "untrusted-upstream")
        XCTAssertTrue(o.receivesNoRequest(beyond: requestsBefore), "sent to the untrusted upstream: \(o.requestLines)")
        XCTAssertEqual(o.requestLines.count, requestsBefore, "nothing was sent to the untrusted upstream")
    }

    /// Issue #18 (2.4): with the defaults no upstream is probed (an origin sees no connection
    /// over more than the old 5 s default interval while no request is sent); with
    /// `reachability.interval` set, it is.
    func testNoActiveProbesUnlessAnIntervalIsConfigured() throws {
        let quiet = try TestOrigin(.respond { _ in .ok("quiet") })
        defer { quiet.stop() }
        let probed = try TestOrigin(.respond { _ in .ok("probed") })
        defer { probed.stop() }
        let byDefault = try Fixture.start(Fixture.gatewayConfig(upstreamPort: quiet.port))
        defer { byDefault.stop() }
        let started = Date()
        let asked = try Fixture.start(Fixture.gatewayConfig(upstreamPort: probed.port) + "\nreachability: { interval: 1s }\n")
        defer { asked.stop() }

        XCTAssertTrue(probed.waitForConnections(1, timeout: 3), "reachability.interval: 1s probes the upstream")
        // A probe that must not come: wait past the old default interval (5 s) and then some.
        XCTAssertFalse(quiet.waitForConnections(1, timeout: 6.5 - Date().timeIntervalSince(started)),
                       "an upstream was probed with the default configuration")
        XCTAssertEqual(quiet.requests.count, 0)
    }

    /// Issue #18 (2.3, 2.4), with no probes: the request that finds the upstream down gets
    /// 502 upstream-refused with `Retry-After`, the next ones 503 upstream-unreachable with the
    /// same `Retry-After`. After it, exactly one request tries the upstream (still down: its 502)
    /// while the concurrent others fail fast; once the origin is back, the trial after the next
    /// `Retry-After` goes through and closes the circuit, and `/upstreams` shows no current error.
    func testPassiveCircuitFailsFastThenLetsOneTrialThroughAndRecovers() throws {
        let port = unusedLoopbackPort()
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: port)
            + "\nadmin: 127.0.0.1:0\nreachability: { retry_after: 1s }\n")
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let admin = UInt16(try XCTUnwrap(record["port"] as? Int))

        let first = try get(a.port, "/first")
        XCTAssertEqual(first.status, 502)
        XCTAssertEqual(Fixture.json(first.body)["error"] as? String, "upstream-refused")
        XCTAssertEqual(first.header("Retry-After"), "1", "the discovering request says when to come back")
        let second = try get(a.port, "/second")
        XCTAssertEqual(second.status, 503)
        XCTAssertEqual(Fixture.json(second.body)["error"] as? String, "upstream-unreachable")
        XCTAssertEqual(second.header("Retry-After"), "1")
        XCTAssertEqual(try upstreamState(admin)["state"] as? String, "unreachable")
        XCTAssertNotNil(try upstreamState(admin)["last_error"] as? String)

        /// `n` requests at once (each its own client), their statuses.
        func burst(_ n: Int, _ path: String) -> [Int] {
            let statuses = Mutex<[Int]>([])
            let port = a.port
            DispatchQueue.concurrentPerform(iterations: n) { i in
                let status = (try? RawClient(port: port)).flatMap { c in
                    defer { c.close() }
                    return try? c.exchange("GET \(path)-\(i) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").status
                } ?? -1
                statuses.withLock { $0.append(status) }
            }
            return statuses.withLock { $0 }.sorted()
        }

        // After Retry-After, still down: one trial (refused, 502), the rest fail fast.
        usleep(1_100_000)
        let down = burst(8, "/down")
        XCTAssertEqual(down, [502] + Array(repeating: 503, count: 7), "exactly one trial while the circuit is half-open")

        // The origin is back; after Retry-After one trial goes through and closes the circuit.
        let o = try TestOrigin(.respond { r in .ok("back \(r.target)") }, port: port)
        origin = o
        XCTAssertEqual(try get(a.port, "/before-retry-after").status, 503, "the circuit is open again after the failed trial")
        usleep(1_100_000)
        let up = burst(8, "/up")
        let served = up.filter { $0 == 200 }.count
        XCTAssertGreaterThanOrEqual(served, 1, "\(up)")
        XCTAssertEqual(up.filter { $0 != 200 && $0 != 503 }, [], "\(up)")
        XCTAssertEqual(o.requests.filter { $0.target.hasPrefix("/up-") }.count, served,
                       "only the trial (and requests after the circuit closed) reached the origin")
        XCTAssertNil(o.requests.first { $0.target.hasPrefix("/down-") || $0.target == "/before-retry-after" })
        XCTAssertEqual(try get(a.port, "/after").status, 200, "the circuit is closed")

        let state = try upstreamState(admin)
        XCTAssertEqual(state["state"] as? String, "reachable")
        XCTAssertTrue(state["last_error"] is NSNull, "no current error once reachable: \(state)")
        let failure = try XCTUnwrap(state["last_failure"] as? [String: Any], "the last failure stays as history")
        XCTAssertNotNil(failure["error"] as? String)
        XCTAssertGreaterThan(failure["at"] as? Int ?? 0, 0)
    }

    /// The trial may be served by a pooled connection (no connect, so no "connection came up"):
    /// its response closes the circuit all the same. Here the origin stops listening but keeps
    /// its open connection serving: a request that needs a new connection is refused (the
    /// circuit opens) while the pooled one still works; after `Retry-After` the trial takes the
    /// pooled connection, and the request after it goes through instead of failing fast.
    func testATrialServedByAPooledConnectionClosesTheCircuit() throws {
        let o = try TCPTestServer { c in
            while let head = try? c.read(through: "\r\n\r\n", timeout: 10), !head.isEmpty {
                if String(decoding: head, as: UTF8.self).hasPrefix("GET /slow ") { usleep(500_000) }
                try? c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1)
            + "\nreachability: { retry_after: 1s }\n")
        airlock = a
        func keepAlive(_ c: RawClient, _ path: String) throws -> RawResponse {
            try c.exchange("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n")
        }
        let first = try RawClient(port: a.port)
        defer { first.close() }
        XCTAssertEqual(try keepAlive(first, "/first").status, 200)   // its upstream connection is pooled

        o.stop()   // no new connection; the pooled one still serves
        try first.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")   // takes the pooled connection
        usleep(100_000)
        let refused = try get(a.port, "/needs-a-new-connection")
        XCTAssertEqual(refused.status, 502)
        XCTAssertEqual(refused.header("Retry-After"), "1")
        XCTAssertEqual(try first.readResponse(timeout: 5).status, 200, "the pooled connection still serves")
        XCTAssertEqual(try keepAlive(first, "/open").status, 503, "the circuit is open")

        usleep(1_100_000)
        XCTAssertEqual(try keepAlive(first, "/trial").status, 200, "the trial, on the pooled connection")
        XCTAssertEqual(try keepAlive(first, "/after").status, 200, "the trial's response closed the circuit")
        XCTAssertEqual(o.acceptedCount, 1)
    }

    /// Connect timeouts open the circuit after 3 in a row: the third 504 says when to come
    /// back (`Retry-After`), as the 503 after it does; the first two do not (the circuit is
    /// still closed).
    func testTheTimeoutThatOpensTheCircuitCarriesRetryAfter() throws {
        let hole = try BlackholeListener()
        defer { hole.close() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: hole.port, limits: ["connect_timeout": "300ms"])
            + "\nreachability: { retry_after: 2s }\n")
        airlock = a
        for i in 1...3 {
            let r = try get(a.port, "/t\(i)")
            XCTAssertEqual(r.status, 504, "request \(i)")
            XCTAssertEqual(r.header("Retry-After"), i == 3 ? "2" : nil, "request \(i)")
        }
        let fast = try get(a.port, "/fast")
        XCTAssertEqual(fast.status, 503)
        XCTAssertEqual(fast.header("Retry-After"), "2")
    }

    /// Connect attempts begun together that time out together (a burst that overran the
    /// upstream's accept queue) do not open the circuit when a connection begun after them came
    /// up: they are not three signals that the upstream is down. Three requests' connects hang
    /// (the queue is full); a fourth, sent 0.3 s later into a slot made for it, is served; the
    /// three end 504 at the connect timeout; a fifth still goes upstream and is served (it was
    /// answered 503 upstream-unreachable at once when the three counted).
    func testTimeoutsOfAttemptsBegunBeforeAConnectionCameUpDoNotOpenTheCircuit() throws {
        let hole = try BlackholeListener()
        defer { hole.close() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: hole.port, limits: ["connect_timeout": "2s"], workers: 1))
        airlock = a
        let hung = try (1...3).map { i in
            let c = try RawClient(port: a.port)
            try c.send("GET /hung\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            return c
        }
        defer { for c in hung { c.close() } }
        // A request into a slot made for its connect: did its connect come, and what did it get?
        func throughOneSlot(_ name: String) throws -> (connected: Bool, response: RawResponse) {
            try hole.openOneSlot()
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send("GET /\(name) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let connected = try hole.serveOneQueued(body: name, timeout: 3)
            return (connected, try c.readResponse(timeout: 5))
        }
        usleep(300_000)   // their connects began and hang
        let fourth = try throughOneSlot("fourth")
        XCTAssertTrue(fourth.connected, "the fourth request's connect took the slot")
        XCTAssertEqual(fourth.response.status, 200)
        XCTAssertEqual(String(decoding: fourth.response.body, as: UTF8.self), "fourth")
        for (i, c) in hung.enumerated() {
            let r = try c.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 504, "hung request \(i + 1): \(String(decoding: r.body, as: UTF8.self))")
        }
        let fifth = try throughOneSlot("fifth")
        XCTAssertTrue(fifth.connected, "the fifth request went upstream")
        XCTAssertEqual(fifth.response.status, 200, String(decoding: fifth.response.body, as: UTF8.self))
        XCTAssertNil(a.logRecords().first { $0["event"] as? String == "upstream.reachability" && $0["to"] as? String == "unreachable" },
                     "the upstream was never judged unreachable")
    }
}

