import AirlockTesting
import Foundation
import XCTest

/// `limits.max_connections`: a client connection above it is refused (closed without being served) and
/// logged as `connection.refused`, reason `max-connections`; the admitted ones are served on.
final class ConnectionLimitTests: XCTestCase {
    func testConnectionAboveMaxConnectionsIsRefusedAndLogged() throws {
        let origin = try TestOrigin(.respond { req in .ok("served \(req.target)") })
        defer { origin.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML(["max_connections": "2"]))
            routes:
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(origin.port)
            """)
        defer { a.stop() }
        // Two connections, each served once (so Airlock has surely taken both), kept open.
        let first = try RawClient(port: a.port)
        defer { first.close() }
        XCTAssertEqual(try first.exchange("GET /first HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
        let second = try RawClient(port: a.port)
        defer { second.close() }
        XCTAssertEqual(try second.exchange("GET /second HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)

        // The third: the kernel completes the handshake; Airlock must not serve it.
        let third = try RawClient(port: a.port)
        defer { third.close() }
        try? third.send("GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
        do {
            // Refused with a close; an error answer (503) before the close is a refusal too.
            let r = try third.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 503, "a connection above max_connections was answered: \(String(decoding: r.raw, as: UTF8.self))")
            XCTAssertTrue(third.isClosedByPeer(timeout: 10), "a refused connection stays open")
        } catch let error as AirlockTestingError {
            XCTAssertEqual(error.kind, .closed, "neither closed nor answered: \(error)")
        }
        XCTAssertFalse(origin.requests.contains { $0.target == "/third" }, "the refused request reached the origin")
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "connection.refused" },
                                   a.logLines.joined(separator: "\n"))
        XCTAssertEqual(record["reason"] as? String, "max-connections")
        XCTAssertEqual(record["key"] as? String, "limits.max_connections")
        let refused = (record["refused"] as? NSNumber)?.intValue ?? Int(record["refused"] as? String ?? "")
        XCTAssertGreaterThanOrEqual(refused ?? 0, 1, "\(record)")
        XCTAssertTrue((record["client"] as? String ?? "").hasPrefix("127.0.0.1:"), "\(record)")

        // The admitted connections are still served.
        XCTAssertEqual(try first.exchange("GET /first-again HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
        // Below the limit again once one closes: a new connection is served (as soon as Airlock has seen the
        // close; bounded retries).
        second.close()
        var status = 0
        for _ in 0..<50 where status != 200 {
            if let c = try? RawClient(port: a.port),
               let r = try? c.exchange("GET /later HTTP/1.1\r\nHost: x\r\n\r\n") {
                status = r.status
                c.close()
            } else {
                usleep(100_000)
            }
        }
        XCTAssertEqual(status, 200, "no connection served after one of the two closed")
    }

    /// Issue #18 (2.5): a burst of refusals is logged at most once a second, but the count held
    /// back is flushed on a timer: within a bounded time after the burst (no further refusal),
    /// the `refused` counts of the `connection.refused` records add up to the refusals, and so
    /// does `airlock_connections_refused_total{reason="max-connections"}`.
    func testEveryRefusalIsCountedInTheLogAndTheMetricWithinABoundedTime() throws {
        try PrometheusText.requireParser()
        let origin = try TestOrigin(.respond { req in .ok("served \(req.target)") })
        defer { origin.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:0
            \(Fixture.limitsYAML(["max_connections": "2"]))
            routes:
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(origin.port)
            """)
        defer { a.stop() }
        let adminRecord = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let admin = UInt16(try XCTUnwrap(adminRecord["port"] as? Int))
        // The cap is taken by two served connections, kept open.
        let held = try (0..<2).map { i in
            let c = try RawClient(port: a.port)
            XCTAssertEqual(try c.exchange("GET /held-\(i) HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
            return c
        }
        defer { for c in held { c.close() } }

        // A burst, all within the first second of throttling: each one closed at accept.
        let burst = 40
        for i in 0..<burst {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            XCTAssertTrue(c.isClosedByPeer(timeout: 5), "connection \(i) of the burst was not refused")
        }

        func logged() -> Int {
            a.logRecords().filter { $0["event"] as? String == "connection.refused" }
                .reduce(0) { $0 + (($1["refused"] as? NSNumber)?.intValue ?? 0) }
        }
        let deadline = Date().addingTimeInterval(3)
        while logged() < burst && Date() < deadline { usleep(50_000) }
        XCTAssertEqual(logged(), burst, "the refusals held back were not written within 3 s of the burst")

        let metrics = try Fixture.metrics(admin: admin)
        XCTAssertEqual(metrics.types["airlock_connections_refused"], "counter")
        XCTAssertEqual(metrics.value("airlock_connections_refused_total", ["reason": "max-connections"]), Double(burst))
    }

    /// A burst of connects while the acceptor is not accepting (here: the process stopped) waits
    /// in the kernel's accept queue, which Airlock asks to be as long as the system allows
    /// (`net.core.somaxconn`), and is served once it accepts again. With a fixed 1024 the
    /// connect after the 1025th lost its SYN and waited a second or more for the retry.
    func testABurstOfConnectsLongerThan1024WaitsInTheAcceptQueueAndIsServed() throws {
        let somaxconn = try XCTUnwrap(kernelSetting("net/core/somaxconn")?.first, "net.core.somaxconn unreadable")
        XCTAssertGreaterThan(somaxconn, 1100, "net.core.somaxconn is \(somaxconn): too small to tell the queue from a fixed 1024")
        let burst = min(somaxconn, 3000)
        let origin = try TestOrigin(.respond { req in .ok("served \(req.target)") })
        defer { origin.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: origin.port, limits: ["upstream_timeout": "20s"], workers: 1))
        defer { a.stop() }
        a.signal(SIGSTOP)
        var clients: [RawClient] = []
        defer { for c in clients { c.close() } }
        for i in 0..<burst {
            // The handshake is the kernel's: it completes at once while the queue has room.
            do { clients.append(try RawClient(port: a.port, connectTimeout: 0.5)) } catch {
                XCTFail("connect \(i + 1) of \(burst) did not complete within 0.5 s while Airlock was stopped: \(error)")
                break
            }
        }
        a.signal(SIGCONT)
        XCTAssertEqual(clients.count, burst)
        for (i, c) in clients.enumerated() { try c.send("GET /b\(i) HTTP/1.1\r\nHost: x\r\n\r\n") }
        var served = 0
        for (i, c) in clients.enumerated() {
            let r = try c.readResponse(timeout: 30)
            if r.status == 200 && String(decoding: r.body, as: UTF8.self) == "served /b\(i)" { served += 1 }
        }
        XCTAssertEqual(served, burst, "every queued connection served once Airlock accepted again")
        XCTAssertNil(a.waitForExit(timeout: 0), "Airlock still running")
    }
}
