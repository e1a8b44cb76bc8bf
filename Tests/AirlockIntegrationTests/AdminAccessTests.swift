import AirlockTesting
import Foundation
import XCTest

/// The admin listener's access rules and readiness: `admin_token` (bearer, 401 without it)
/// and `GET /readyz` (200 while taking traffic, 503 once draining).
final class AdminAccessTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?
    let token = "s3cret-token-0123456789"

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private func adminPort(_ a: AirlockProcess) throws -> UInt16 {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return UInt16(try XCTUnwrap(record["port"] as? Int))
    }

    private func get(_ port: UInt16, _ path: String, authorization: String? = nil) throws -> RawResponse {
        let c = try RawClient(port: port)
        defer { c.close() }
        let auth = authorization.map { "Authorization: \($0)\r\n" } ?? ""
        return try c.exchange("GET \(path) HTTP/1.1\r\nHost: admin\r\n\(auth)\r\n")
    }

    func testAdminTokenIsRequiredOnEveryPath() throws {
        let o = try TestOrigin(.respond { _ in .ok("x") })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port) + "\nadmin: 127.0.0.1:0\nadmin_token: \(token)\n")
        airlock = a
        let port = try adminPort(a)
        for path in ["/rejects", "/healthz", "/readyz", "/nowhere"] {
            let none = try get(port, path)
            XCTAssertEqual(none.status, 401, path)
            XCTAssertEqual(Fixture.json(none.body)["error"] as? String, "unauthorized")
            XCTAssertNotNil(none.header("WWW-Authenticate"))
            XCTAssertEqual(try get(port, path, authorization: "Bearer \(token)x").status, 401, "a longer token")
            XCTAssertEqual(try get(port, path, authorization: "Bearer \(token.dropLast())").status, 401, "a prefix")
            XCTAssertEqual(try get(port, path, authorization: "Basic \(token)").status, 401, "another scheme")
            XCTAssertEqual(try get(port, path, authorization: "Beaver \(token)").status, 401, "another scheme, same length")
            let wrongLast = String(token.dropLast()) + (token.last == "0" ? "1" : "0")
            XCTAssertEqual(try get(port, path, authorization: "Bearer \(wrongLast)").status, 401, "one byte off")
            let wrongFirst = (token.first == "a" ? "b" : "a") + String(token.dropFirst())
            XCTAssertEqual(try get(port, path, authorization: "Bearer \(wrongFirst)").status, 401, "first byte off")
        }
        XCTAssertEqual(try get(port, "/healthz", authorization: "Bearer \(token)").status, 200)
        XCTAssertEqual(try get(port, "/rejects", authorization: "bearer \(token)").status, 200, "the scheme is case-insensitive")
        XCTAssertEqual(try get(port, "/nowhere", authorization: "Bearer \(token)").status, 404)
        XCTAssertFalse(a.logLines.joined().contains(token), "the token never reaches the log")

        // The CLI sends AIRLOCK_ADMIN_TOKEN.
        let bin = AirlockProcess.builtExecutable()
        let without = try runProcess(bin, ["health", "--admin", "127.0.0.1:\(port)"], timeout: 15)
        XCTAssertNotEqual(without.exitCode, 0)
        let with = try runProcess("/usr/bin/env", ["AIRLOCK_ADMIN_TOKEN=\(token)", bin, "health", "--admin", "127.0.0.1:\(port)"],
                                  timeout: 15)
        XCTAssertEqual(with.exitCode, 0, with.stderr)
    }

    func testReadyzTurns503WhenTheDrainBegins() throws {
        let o = try TestOrigin(.respond { _ in
            usleep(1_500_000)
            return .ok("slow")
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["drain_timeout": "10s"]) + "\nadmin: 127.0.0.1:0\n")
        airlock = a
        let port = try adminPort(a)
        let ready = try get(port, "/readyz")
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(Fixture.json(ready.body)["status"] as? String, "ready")
        // A request in flight keeps the drain (and the admin listener) going for a while.
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(o.waitForRequests(1, timeout: 5))
        a.signal(SIGTERM)
        XCTAssertNotNil(a.waitForLog(timeout: 5) { ($0["event"] as? String) == "airlock.draining" })
        let draining = try get(port, "/readyz")
        XCTAssertEqual(draining.status, 503)
        XCTAssertEqual(Fixture.json(draining.body)["error"] as? String, "draining")
        XCTAssertEqual(try get(port, "/healthz").status, 200, "alive while it drains")
        XCTAssertEqual(try c.readResponse(timeout: 10).status, 200, "the request in flight still completes")
        XCTAssertEqual(a.waitForExit(timeout: 10), 0)
    }
}
