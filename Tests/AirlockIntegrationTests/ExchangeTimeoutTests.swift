import AirlockTesting
import Foundation
import XCTest

/// A route's `request.timeout` (AFNetworking's `timeoutInterval`) bounds the whole exchange:
/// connect, sending, waiting and relay. Real sockets on loopback; `upstream_timeout` is set far
/// above it so that only the exchange's own deadline can end these exchanges in time.
final class ExchangeTimeoutTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    /// Airlock in front of `o`: route `timed` (`/t…`, `request.timeout: <timeout>`) and route
    /// `plain` (everything else, no `request:` block).
    private func start(_ o: TestOrigin, timeout: String) throws -> AirlockProcess {
        origin = o
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML(["upstream_timeout": "60s"]))
            routes:
              - name: timed
                match: { host: "*", path_prefix: /t }
                upstream: http://127.0.0.1:\(o.port)
                request: { timeout: \(timeout) }
              - name: plain
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
            """)
        airlock = a
        return a
    }

    /// The `request.error` records of one request id.
    private func errorRecords(_ a: AirlockProcess, _ requestID: String?) -> [[String: Any]] {
        a.logRecords().filter { $0["event"] as? String == "request.error" && $0["request_id"] as? String == requestID }
    }

    /// An origin that never answers: 504 exchange-timeout once the timeout passed (not before,
    /// not much after), the origin's connection is closed by Airlock, one error record.
    func testAnOriginThatNeverAnswersGets504AndItsConnectionClosed() throws {
        let a = try start(try TestOrigin(.silent), timeout: "1s")
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let sent = Date()
        try c.send("GET /t/never HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = try c.readResponse(timeout: 20)
        let waited = Date().timeIntervalSince(sent)
        let body = Fixture.json(r.body)
        XCTAssertEqual(r.status, 504, r.bodyString)
        XCTAssertEqual(body["error"] as? String, "exchange-timeout", r.bodyString)
        XCTAssertGreaterThanOrEqual(waited, 0.9, "answered before the timeout")
        XCTAssertLessThan(waited, 6, "answered long after the 1 s timeout")
        XCTAssertTrue(origin?.waitForPeerCloses(1, timeout: 5) ?? false, "Airlock kept the upstream connection")
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" }
        XCTAssertEqual(record?["status"] as? Int, 504, "\(record ?? [:])")
        XCTAssertEqual(errorRecords(a, body["request_id"] as? String).map { $0["error"] as? String }, ["exchange-timeout"])
    }

    /// The head and part of the body, then the origin stalls: the client's connection is cut
    /// before the declared length (never a complete-looking response), with an error record.
    func testAResponseThatStallsMidBodyIsCutOff() throws {
        let o = try TestOrigin(.rawThenStall { _ in Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello".utf8) })
        let a = try start(o, timeout: "1s")
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let sent = Date()
        try c.send("GET /t/stall HTTP/1.1\r\nHost: x\r\n\r\n")
        let got = String(decoding: try c.readUntilClose(timeout: 20), as: UTF8.self)
        let waited = Date().timeIntervalSince(sent)
        XCTAssertTrue(got.hasPrefix("HTTP/1.1 200"), got)
        XCTAssertTrue(got.hasSuffix("\r\n\r\nhello"), "the client gets what arrived, then the cut: \(got)")
        XCTAssertGreaterThanOrEqual(waited, 0.9, "cut before the timeout")
        XCTAssertLessThan(waited, 6, "cut long after the 1 s timeout")
        XCTAssertTrue(o.waitForPeerCloses(1, timeout: 5), "Airlock kept the upstream connection")
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" }
        XCTAssertEqual(record?["error"] as? String, "exchange-timeout", "\(record ?? [:])")
        XCTAssertEqual(errorRecords(a, record?["request_id"] as? String).count, 1, "logged once")
    }

    /// Each request of a keep-alive connection has its own deadline: a fast one, then one that
    /// ends after the first one's deadline but within its own (200), then one that overruns
    /// its own (504, and the connection carries on).
    func testEachRequestOfAKeepAliveConnectionIsJudgedOnItsOwn() throws {
        let o = try TestOrigin(.respond { req in
            if req.target.hasSuffix("/slow") { Thread.sleep(forTimeInterval: 1.1) }
            if req.target.hasSuffix("/slower") { Thread.sleep(forTimeInterval: 3) }
            return .ok("served \(req.target)")
        })
        let a = try start(o, timeout: "1.5s")
        let c = try RawClient(port: a.port)
        defer { c.close() }
        XCTAssertEqual(try c.exchange("GET /t/fast HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
        Thread.sleep(forTimeInterval: 0.75)
        // Answered 1.85 s after the first request began: past its deadline, within this one's.
        let slow = try c.exchange("GET /t/slow HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(slow.status, 200, slow.bodyString)
        XCTAssertEqual(slow.bodyString, "served /t/slow")
        let slower = try c.exchange("GET /t/slower HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(slower.status, 504, slower.bodyString)
        XCTAssertEqual(Fixture.json(slower.body)["error"] as? String, "exchange-timeout")
        XCTAssertEqual(try c.exchange("GET /t/fast HTTP/1.1\r\nHost: x\r\n\r\n").status, 200, "the connection carries on")
    }

    /// A route without `request.timeout` is unaffected: the same slow answer that overruns the
    /// timed route reaches the client whole.
    func testARouteWithoutTimeoutIsUnaffected() throws {
        let o = try TestOrigin(.respond { req in
            Thread.sleep(forTimeInterval: 1.5)
            return .ok("served \(req.target)")
        })
        let a = try start(o, timeout: "1s")
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let plain = try c.exchange("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(plain.status, 200, plain.bodyString)
        XCTAssertEqual(plain.bodyString, "served /plain")
        XCTAssertEqual(try c.exchange("GET /t/x HTTP/1.1\r\nHost: x\r\n\r\n").status, 504)
    }
}
