import AirlockTesting
import Foundation
import XCTest

/// `GET /metrics` on the admin listener: Prometheus text that the reference parser
/// (prometheus_client) accepts, whose counters and histograms move with real traffic (curl
/// through the gateway), with bounded labels only (route names, status classes, reason codes).
final class MetricsTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private func adminPort(_ a: AirlockProcess) throws -> UInt16 {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return UInt16(try XCTUnwrap(record["port"] as? Int))
    }

    private func scrape(_ port: UInt16) throws -> (RawResponse, PrometheusText) {
        let c = try RawClient(port: port)
        defer { c.close() }
        let r = try c.exchange("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        return (r, try PrometheusText(r.body))
    }

    func testMetricsParseAsPrometheusTextAndCountersMoveWithTraffic() throws {
        try PrometheusText.requireParser()
        try Requirement.tool(Curl.executable)
        let body = "hello from the origin"
        let o = try TestOrigin(.respond { req in
            req.target.hasPrefix("/missing") ? .status(404, "Not Found")
                : req.target.hasPrefix("/j/") ? .ok("not json") : .ok(body)
        })
        origin = o
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 2
            admin: 127.0.0.1:0
            \(Fixture.limitsYAML([:]))
            routes:
              - name: json
                match: { host: "*", path_prefix: /j/ }
                upstream: http://127.0.0.1:\(o.port)
                response: { serializer: json }
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
            """)
        airlock = a
        let admin = try adminPort(a)

        let (first, before) = try scrape(admin)
        XCTAssertTrue(first.header("Content-Type")?.hasPrefix("text/plain") ?? false, first.header("Content-Type") ?? "-")
        XCTAssertEqual(before.types["airlock_requests"], "counter")
        XCTAssertEqual(before.types["airlock_request_duration_seconds"], "histogram")
        XCTAssertEqual(before.types["airlock_in_flight_requests"], "gauge")
        // Every family says what it counts (# HELP, as the reference parser reads it).
        XCTAssertGreaterThanOrEqual(before.docs.count, 15, "\(before.docs.keys.sorted())")
        for (family, doc) in before.docs.sorted(by: { $0.key < $1.key }) {
            XCTAssertFalse(doc.isEmpty, "\(family) has no # HELP")
        }
        let ok0 = before.value("airlock_requests_total", ["route": "api", "status_class": "2xx"])
        XCTAssertEqual(ok0, 0)

        let gateway = "http://127.0.0.1:\(a.port)"
        for i in 0..<5 {
            let r = try Curl.run(["-o", "/dev/null", "-w", "%{http_code}", "-d", "payload-\(i)", gateway + "/ok/\(i)"])
            XCTAssertEqual(r.stdoutString, "200", r.stderr)
        }
        let notFound = try Curl.run(["-o", "/dev/null", "-w", "%{http_code}", gateway + "/missing"])
        XCTAssertEqual(notFound.stdoutString, "404")
        let rejected = try Curl.run(["-o", "/dev/null", "-w", "%{http_code}", gateway + "/j/x"])
        XCTAssertEqual(rejected.stdoutString, "502", "a text body on a json route is refused")

        let (_, after) = try scrape(admin)
        XCTAssertEqual(after.value("airlock_requests_total", ["route": "api", "status_class": "2xx"]), 5)
        XCTAssertEqual(after.value("airlock_requests_total", ["route": "api", "status_class": "4xx"]), 1)
        XCTAssertEqual(after.value("airlock_requests_total", ["route": "json", "status_class": "5xx"]), 1)
        XCTAssertEqual(after.value("airlock_rejects_total", ["route": "json"]), 1, "rejects by route and reason")
        XCTAssertNotNil(after.samples.first { $0.name == "airlock_rejects_total" && !($0.labels["reason"] ?? "").isEmpty })
        XCTAssertEqual(after.value("airlock_request_duration_seconds_count", ["route": "api"]), 6)
        XCTAssertEqual(after.value("airlock_time_to_first_byte_seconds_count", ["route": "api"]), 6)
        XCTAssertGreaterThan(after.value("airlock_request_duration_seconds_sum", ["route": "api"]) ?? 0, 0)
        XCTAssertGreaterThanOrEqual(after.value("airlock_upstream_connect_seconds_count", ["route": "api"]) ?? 0, 1)
        let sent = (0..<5).map { "payload-\($0)".utf8.count }.reduce(0, +)
        XCTAssertEqual(after.value("airlock_request_bytes_total", ["route": "api"]), Double(sent))
        XCTAssertGreaterThanOrEqual(after.value("airlock_response_bytes_total", ["route": "api"]) ?? 0, Double(5 * body.utf8.count))
        XCTAssertEqual(after.value("airlock_in_flight_requests"), 0)
        XCTAssertEqual(after.value("airlock_upstream_reachable", ["route": "api"]), 1)
        // The origin keeps connections alive: the gateway's are parked idle in its pool, none active.
        XCTAssertGreaterThanOrEqual(after.value("airlock_upstream_connections", ["route": "api", "state": "idle"]) ?? 0, 1)
        XCTAssertEqual(after.value("airlock_upstream_connections", ["route": "api", "state": "active"]), 0)

        // Labels are bounded values: no sample carries a path, a URL or a client address.
        for s in after.samples {
            for (k, v) in s.labels {
                XCTAssertFalse(v.contains("/ok/") || v.contains("/missing") || v.contains("/j/"), "\(s.name) \(k)=\(v)")
            }
        }
    }
}
