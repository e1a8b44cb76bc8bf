import AirlockTesting
import Foundation
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
        let o = try TestOrigin(.respond { _ in .ok("up") })
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
}
