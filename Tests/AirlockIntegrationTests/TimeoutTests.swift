import AirlockTesting
import Foundation
import XCTest

/// `limits.connect_timeout` and the upstream side of `limits.idle_timeout`, against real sockets on loopback.
final class TimeoutTests: XCTestCase {
    private func gateway(upstreamPort: UInt16, limits: [String: String]) throws -> AirlockProcess {
        try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML(limits))
            routes:
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(upstreamPort)
            """)
    }

    /// An upstream that never answers the SYN (a listener whose accept queue is full): after
    /// connect_timeout the client gets 504 upstream-timeout for the connect, long before upstream_timeout.
    func testConnectTimeoutAnswers504() throws {
        let hole = try BlackholeListener()
        defer { hole.close() }
        let a = try gateway(upstreamPort: hole.port, limits: ["connect_timeout": "1s", "upstream_timeout": "60s"])
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let sent = Date()
        try c.send("GET /connect HTTP/1.1\r\nHost: x\r\n\r\n")
        // Read bound (20 s) below upstream_timeout (60 s) and the kernel's own SYN retries (~2 min).
        let r = try c.readResponse(timeout: 20)
        let waited = Date().timeIntervalSince(sent)
        let body = Fixture.json(r.body)
        XCTAssertEqual(r.status, 504, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(body["error"] as? String, "upstream-timeout")
        XCTAssertTrue((body["message"] as? String ?? "").contains("(connect)"), "\(body)")
        XCTAssertGreaterThanOrEqual(waited, 0.9, "answered before connect_timeout: not the connect timer")
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" }
        XCTAssertEqual(record?["error"] as? String, "upstream-timeout", "\(record ?? [:])")
    }

    /// A pooled upstream connection left idle longer than idle_timeout is closed by Airlock: the origin sees
    /// its end, not at once but after the idle time; the next request opens a new connection.
    func testIdlePooledUpstreamConnectionIsClosedAfterIdleTimeout() throws {
        let origin = try TestOrigin(.respond { req in .ok("served \(req.target)") })
        defer { origin.stop() }
        // upstream_timeout far above the wait below: only idle_timeout can close the idle connection in time.
        let a = try gateway(upstreamPort: origin.port, limits: ["idle_timeout": "1s", "upstream_timeout": "60s"])
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        let r = try c.exchange("GET /first HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answered = Date()
        c.close()
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(origin.acceptedConnections, 1)
        XCTAssertTrue(origin.waitForPeerCloses(1, timeout: 15),
                      "the idle upstream connection was still open 15 s later (idle_timeout 1s)")
        let idle = Date().timeIntervalSince(answered)
        XCTAssertGreaterThanOrEqual(idle, 0.9, "closed after \(idle) s: before idle_timeout, so not kept in the pool")
        XCTAssertTrue(origin.protocolErrors.isEmpty, "\(origin.protocolErrors)")
        // The closed connection is not handed out again.
        let d = try RawClient(port: a.port)
        defer { d.close() }
        XCTAssertEqual(try d.exchange("GET /second HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
        XCTAssertEqual(origin.acceptedConnections, 2)
    }
}
