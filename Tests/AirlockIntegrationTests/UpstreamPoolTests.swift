import AirlockTesting
import Foundation
import XCTest

/// Upstream connections belong to the worker's pool, not to the client that used them last:
/// idle keep-alive clients hold no upstream connection (issue #11, item 2).
final class UpstreamPoolTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    func testIdleClientsHoldNoUpstreamConnections() throws {
        let clients = 2000, workers = 2, maxIdle = 8
        let o = try TestOrigin(.respond { r in .ok("hello \(r.target)") })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(
            upstreamPort: o.port, limits: ["max_idle_per_upstream": "\(maxIdle)", "upstream_timeout": "20s", "connect_timeout": "10s"], workers: workers))
        airlock = a

        var open: [RawClient] = []
        defer { for c in open { c.close() } }
        for _ in 0..<clients { open.append(try RawClient(port: a.port)) }

        // Every client sends its request before any response is read, so many exchanges are in
        // flight at once and need upstream connections of their own. Returns how many clients
        // got their own 200.
        func round(_ name: String) throws -> Int {
            for (i, c) in open.enumerated() {
                try c.send("GET /\(name)/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            }
            var ok = 0
            var other: [String: Int] = [:]
            for (i, c) in open.enumerated() {
                let r = try c.readResponse(timeout: 30)
                let body = String(decoding: r.body, as: UTF8.self)
                if r.status == 200 && body == "hello /\(name)/\(i)" { ok += 1 } else { other["\(r.status) \(body.prefix(160))", default: 0] += 1 }
            }
            if !other.isEmpty { print("round \(name): \(other)") }
            return ok
        }
        XCTAssertEqual(try round("first"), clients, "every first request answered by the origin")
        let peak = o.acceptedConnections
        XCTAssertGreaterThan(peak, workers * maxIdle, "the first round needed more connections than the pool keeps")

        // All clients are idle and still connected: the origin sees only the pooled connections.
        let cap = workers * maxIdle
        XCTAssertTrue(o.waitForOpenConnections(atMost: cap, timeout: 10),
                      "\(o.openConnections) upstream connections open for \(clients) idle clients (cap \(cap))")
        XCTAssertEqual(a.waitForExit(timeout: 0), nil, "Airlock still running")

        // Each idle client still works: a second request on the same connection.
        XCTAssertEqual(try round("second"), clients, "every second request answered on the client's kept-alive connection")
        XCTAssertEqual(o.requests.count, 2 * clients)
        XCTAssertTrue(o.waitForOpenConnections(atMost: cap, timeout: 10), "\(o.openConnections) open after round two")
    }

    /// A client's next request prefers the connection that served it last while that one is
    /// still idle in the pool (affinity as a preference): two clients that alternate keep
    /// one upstream connection each, although the pool alone would hand out the most recent.
    func testClientsPreferTheirLastUpstreamConnection() throws {
        let o = try TestOrigin(.respond { r in
            if r.target.hasPrefix("/slow") { usleep(300_000) }
            return .ok("x")
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1))
        airlock = a
        let ca = try RawClient(port: a.port), cb = try RawClient(port: a.port)
        defer { ca.close(); cb.close() }
        // Both in flight at once: two upstream connections.
        try ca.send("GET /slow/a0 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        try cb.send("GET /slow/b0 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try ca.readResponse().status, 200)
        XCTAssertEqual(try cb.readResponse().status, 200)
        XCTAssertEqual(o.acceptedConnections, 2)
        for i in 1...5 {
            XCTAssertEqual(try ca.exchange("GET /a\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n").status, 200)
            XCTAssertEqual(try cb.exchange("GET /b\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n").status, 200)
        }
        let reqs = o.requests
        let aConns = Set(reqs.filter { $0.target.contains("/a") }.map(\.connectionIndex))
        let bConns = Set(reqs.filter { $0.target.contains("/b") }.map(\.connectionIndex))
        XCTAssertEqual(aConns.count, 1, "client A's requests went over \(aConns)")
        XCTAssertEqual(bConns.count, 1, "client B's requests went over \(bConns)")
        XCTAssertEqual(o.acceptedConnections, 2)
    }
}
