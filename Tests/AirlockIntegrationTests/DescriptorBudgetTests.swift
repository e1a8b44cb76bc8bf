import AirlockTesting
import Foundation
import XCTest

/// Under a low descriptor limit the client cap becomes what the limit holds: a client beyond
/// it is refused at accept, and every client accepted gets a real answer, never a 502 for want
/// of an upstream socket (issue #11, item 3).
final class DescriptorBudgetTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?
    var scratch: String?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
        if let scratch { try? FileManager.default.removeItem(atPath: scratch) }
    }

    private func startLimited(nofile: Int, yaml: String) throws -> AirlockProcess {
        let dir = NSTemporaryDirectory() + "airlock-ulimit-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        scratch = dir
        let a = try Fixture.startWithDescriptorLimit(nofile, yaml: yaml, directory: dir)
        airlock = a
        return a
    }

    private func listening(_ a: AirlockProcess) -> [String: Any]? {
        a.waitForLog(timeout: 5) { ($0["event"] as? String) == "airlock.listening" }
    }

    func testLowDescriptorLimitCapsClientsAndAnswersEveryAcceptedOne() throws {
        let o = try TestOrigin(.respond { r in .ok("ok \(r.target)") })
        origin = o
        let a = try startLimited(nofile: 256, yaml: Fixture.gatewayConfig(upstreamPort: o.port))
        let cap = try XCTUnwrap(listening(a)?["max_connections"] as? Int)
        XCTAssertLessThan(cap, 128, "256 descriptors hold fewer than 128 clients with their upstream sockets")
        XCTAssertGreaterThan(cap, 32)
        let fdLimit = a.waitForLog(timeout: 1) { ($0["event"] as? String) == "airlock.fd-limit" }
        XCTAssertEqual(fdLimit?["nofile"] as? Int, 256)
        XCTAssertEqual(fdLimit?["effective_max_connections"] as? Int, cap)
        XCTAssertEqual(fdLimit?["max_connections"] as? Int, 10000)
        XCTAssertEqual(fdLimit?["level"] as? String, "info", "the default adapts without a warning")

        // 600 clients connect and each sends a request; all stay connected until the end.
        let total = 600
        var clients: [RawClient?] = []
        defer { for c in clients { c?.close() } }
        var connectFailed = 0
        for i in 0..<total {
            do {
                let c = try RawClient(port: a.port, connectTimeout: 5)
                clients.append(c)
                try? c.send("GET /c/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            } catch {
                clients.append(nil)
                connectFailed += 1
            }
        }
        var ok = 0, refused = 0
        var other: [String] = []
        for (i, c) in clients.enumerated() {
            guard let c else { continue }
            do {
                let r = try c.readResponse(timeout: 15)
                if r.status == 200 && String(decoding: r.body, as: UTF8.self) == "ok /c/\(i)" {
                    ok += 1
                } else {
                    other.append("#\(i): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
                }
            } catch let e as AirlockTestingError where e.kind == .closed || e.kind == .system(errno: ECONNRESET) {
                refused += 1   // closed at accept, before any byte of a response
            } catch {
                other.append("#\(i): \(error)")
            }
        }
        print("descriptor-budget: cap \(cap) ok \(ok) refused \(refused) other \(other.count)")
        XCTAssertEqual(other, [], "an accepted client got something other than its 200")
        XCTAssertEqual(connectFailed, 0)
        XCTAssertEqual(ok + refused, total)
        XCTAssertGreaterThan(ok, 0)
        XCTAssertLessThanOrEqual(ok, cap)
        XCTAssertGreaterThanOrEqual(refused, total - cap)
        let records = a.logRecords()
        XCTAssertTrue(records.contains { ($0["event"] as? String) == "connection.refused" && ($0["reason"] as? String) == "max-connections" })
        XCTAssertFalse(records.contains { ($0["event"] as? String) == "request.error" && ($0["status"] as? Int) == 502 },
                       "no accepted client was failed for want of an upstream socket")
        XCTAssertEqual(o.requests.count, ok)
    }

    /// A `max_connections` the user named and the limit cannot hold warns, naming the key.
    func testExplicitMaxConnectionsThatDoesNotFitWarns() throws {
        let o = try TestOrigin(.respond { _ in .ok("x") })
        origin = o
        let a = try startLimited(nofile: 256, yaml: Fixture.gatewayConfig(upstreamPort: o.port, limits: ["max_connections": "500"]))
        let rec = a.waitForLog(timeout: 5) { ($0["event"] as? String) == "airlock.fd-limit" }
        XCTAssertEqual(rec?["level"] as? String, "warning")
        XCTAssertEqual(rec?["key"] as? String, "limits.max_connections")
        XCTAssertEqual(rec?["max_connections"] as? Int, 500)
        XCTAssertEqual(listening(a)?["max_connections"] as? Int, rec?["effective_max_connections"] as? Int)
    }

    /// The embedded default's limits on an ordinary machine's limit (this one's hard limit is
    /// 20,000, below the 20,256 that 10,000 clients would want) start without any warning.
    /// The admin listener is on port 0 only so that another Airlock on 9090 cannot warn.
    func testDefaultLimitsStartWithoutWarnings() throws {
        let a = try startLimited(nofile: 20000, yaml: Fixture.forwardConfig() + "\nadmin: 127.0.0.1:0\n")
        XCTAssertNotNil(listening(a))
        let warnings = a.logRecords().filter { ["warning", "error", "critical"].contains($0["level"] as? String ?? "") }
        XCTAssertEqual(warnings.map { $0["event"] as? String ?? "?" }, [])
    }

    /// Idle pooled connections are outside the client budget (a set per upstream): when the
    /// descriptors run out they give way. A new upstream connection closes an idle one and
    /// retries instead of answering 502, and a client that could not be accepted is taken
    /// once the workers shed idle connections. The descriptors are taken away from the
    /// running process by lowering its soft limit to what it has open (prlimit).
    func testIdlePooledConnectionsGiveWayWhenDescriptorsRunOut() throws {
        let origins = try (0..<4).map { i in try TestOrigin(.respond { _ in .ok("origin \(i)") }) }
        defer { for o in origins { o.stop() } }
        let a = try startLimited(nofile: 256, yaml: """
        listen: 127.0.0.1:0
        workers: 1
        admin: off
        \(Fixture.limitsYAML(["idle_timeout": "60s"]))
        routes:
          - name: default
            match: { host: "*" }
            upstream: origin
        """)
        let c1 = try RawClient(port: a.port)
        defer { c1.close() }
        for i in 0..<3 {
            let r = try c1.exchange("GET \(origins[i].url("/warm")) HTTP/1.1\r\nHost: 127.0.0.1:\(origins[i].port)\r\n\r\n")
            XCTAssertEqual(r.status, 200)
        }
        // Three idle pooled connections now, and no descriptor free beyond them.
        try Fixture.exhaustDescriptors(of: a.pid, hard: 256)

        let r4 = try c1.exchange("GET \(origins[3].url("/new")) HTTP/1.1\r\nHost: 127.0.0.1:\(origins[3].port)\r\n\r\n")
        XCTAssertEqual(r4.status, 200, String(decoding: r4.body, as: UTF8.self))
        XCTAssertEqual(String(decoding: r4.body, as: UTF8.self), "origin 3")

        let c2 = try RawClient(port: a.port)
        defer { c2.close() }
        let r5 = try c2.exchange("GET \(origins[0].url("/late")) HTTP/1.1\r\nHost: 127.0.0.1:\(origins[0].port)\r\n\r\n")
        XCTAssertEqual(r5.status, 200, String(decoding: r5.body, as: UTF8.self))
        XCTAssertNotNil(a.waitForLog(timeout: 1) { ($0["event"] as? String) == "listener.paused" },
                        "the second client met an accept that failed for want of descriptors")
    }
}
