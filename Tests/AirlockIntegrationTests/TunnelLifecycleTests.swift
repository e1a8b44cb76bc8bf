import AirlockTesting
import Foundation
import XCTest

/// A tunnel as a connection among others: counted against `max_connections`, a task in
/// `GET /tasks` that `DELETE /tasks` cancels, visible in
/// `/metrics` (tunnels open, tunnels ended by how, bytes each way), and closed by a drain once
/// the drain timeout passes (logged once, `drain-timeout`).
final class TunnelLifecycleTests: XCTestCase {
    private var airlock: AirlockProcess?
    private var upstream: TCPTestServer?

    override func tearDown() {
        airlock?.stop()
        upstream?.stop()
    }

    private func start(limits: [String: String] = [:]) throws -> (AirlockProcess, TCPTestServer) {
        let echo = try TCPTestServer { c in
            while let chunk = try? c.read(upTo: 65536, timeout: 20), !chunk.isEmpty { try? c.write(chunk) }
            c.shutdownWrite()
        }
        upstream = echo
        let a = try Fixture.start(Fixture.tunnelConfig(connectPort: echo.port, limits: limits))
        airlock = a
        return (a, echo)
    }

    private func open(_ a: AirlockProcess, _ port: UInt16) throws -> TCPTestConnection {
        let c = try TCPTestConnection.connect(port: a.port)
        try c.write("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(String(decoding: try c.read(through: "\r\n\r\n", timeout: 10), as: UTF8.self),
                       "HTTP/1.1 200 Connection established\r\n\r\n")
        return c
    }

    private func metrics(_ a: AirlockProcess) throws -> PrometheusText {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let c = try RawClient(port: UInt16(try XCTUnwrap(record["port"] as? Int)))
        defer { c.close() }
        let r = try c.exchange("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        return try PrometheusText(r.body)
    }

    func testTunnelsShowInMetrics() throws {
        try PrometheusText.requireParser()
        let (a, echo) = try start()
        let c = try open(a, echo.port)
        try c.write(Array(repeating: 0x61, count: 3000))
        XCTAssertEqual(try c.read(exactly: 3000, timeout: 10).count, 3000)
        XCTAssertEqual(try metrics(a).value("airlock_tunnels_open"), 1)
        c.shutdownWrite()
        XCTAssertEqual(try c.readToEnd(timeout: 10), [])
        c.close()
        var m = try metrics(a)
        for _ in 0..<50 where m.value("airlock_tunnels_total", ["route": "tun", "end": "closed"]) != 1 {
            usleep(100_000)
            m = try metrics(a)
        }
        XCTAssertEqual(m.value("airlock_tunnels_total", ["route": "tun", "end": "closed"]), 1)
        XCTAssertEqual(m.value("airlock_tunnel_bytes_total", ["route": "tun", "direction": "up"]), 3000)
        XCTAssertEqual(m.value("airlock_tunnel_bytes_total", ["route": "tun", "direction": "down"]), 3000)
        XCTAssertEqual(m.value("airlock_tunnels_open"), 0)
    }

    private func admin(_ a: AirlockProcess, _ method: String, _ path: String) throws -> RawResponse {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let c = try RawClient(port: UInt16(try XCTUnwrap(record["port"] as? Int)))
        defer { c.close() }
        return try c.exchange("\(method) \(path) HTTP/1.1\r\nHost: admin\r\n\r\n", method: method)
    }

    /// An open tunnel is a task: `GET /tasks` lists it (CONNECT, its target, `tunneling`, the
    /// bytes each way), and `DELETE /tasks/{id}` closes both sides at once, recorded `cancelled`.
    func testATunnelIsATaskThatDeleteCancels() throws {
        let (a, echo) = try start()
        let c = try open(a, echo.port)
        defer { c.close() }
        try c.write(Array(repeating: 0x62, count: 1500))
        XCTAssertEqual(try c.read(exactly: 1500, timeout: 10).count, 1500)
        let listed = Fixture.json(try admin(a, "GET", "/tasks").body)
        let tasks = listed["tasks"] as? [[String: Any]] ?? []
        let task = try XCTUnwrap(tasks.first, "\(listed)")
        XCTAssertEqual(task["method"] as? String, "CONNECT")
        XCTAssertEqual(task["url"] as? String, "127.0.0.1:\(echo.port)")
        XCTAssertEqual(task["state"] as? String, "tunneling")
        XCTAssertEqual((task["upload"] as? [String: Any])?["bytes"] as? Int, 1500)
        XCTAssertEqual((task["download"] as? [String: Any])?["bytes"] as? Int, 1500)
        let id = try XCTUnwrap(task["id"] as? String)
        let r = try admin(a, "DELETE", "/tasks/\(id)")
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let cancelled = Fixture.json(r.body)["cancelled"] as? [[String: Any]]
        XCTAssertEqual(cancelled?.first?["state"] as? String, "cancelled")
        XCTAssertEqual(try c.readToEnd(timeout: 5), [], "the client's side is closed")
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" && $0["tunnel"] != nil }
        XCTAssertEqual(record?["tunnel"] as? String, "cancelled")
        XCTAssertEqual(record?["incomplete"] as? Bool, true)
    }

    func testATunnelHoldsAConnectionSlot() throws {
        let (a, echo) = try start(limits: ["max_connections": "1"])
        let c = try open(a, echo.port)
        defer { c.close() }
        let second = try RawClient(port: a.port)
        defer { second.close() }
        try? second.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(second.isClosedByPeer(timeout: 10), "a second connection was admitted beside the tunnel")
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "connection.refused" })
        try c.write("still here")
        XCTAssertEqual(String(decoding: try c.read(exactly: 10, timeout: 10), as: UTF8.self), "still here")
    }

    func testDrainClosesAnOpenTunnelAfterTheDrainTimeout() throws {
        let (a, echo) = try start(limits: ["drain_timeout": "1s"])
        let c = try open(a, echo.port)
        defer { c.close() }
        try c.write("ping")
        XCTAssertEqual(String(decoding: try c.read(exactly: 4, timeout: 10), as: UTF8.self), "ping")
        let start = Date()
        a.signal(SIGTERM)
        usleep(300_000)
        try c.write("during drain")   // the tunnel still relays during the drain
        XCTAssertEqual(String(decoding: try c.read(exactly: 12, timeout: 10), as: UTF8.self), "during drain")
        XCTAssertEqual(try c.readToEnd(timeout: 10), [], "closed by the drain timeout")
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.8)
        XCTAssertEqual(a.waitForExit(timeout: 15), 0)
        let records = a.logRecords().filter { $0["event"] as? String == "request.access" && $0["tunnel"] != nil }
        XCTAssertEqual(records.count, 1, "logged once")
        XCTAssertEqual(records.first?["tunnel"] as? String, "drain-timeout")
        XCTAssertEqual(records.first?["incomplete"] as? Bool, true)
    }
}
