import AirlockTesting
import Foundation
import XCTest

/// A pooled upstream connection the server dropped just as it was reused: an idempotent
/// request without a body is tried once more on a fresh connection; anything else gets the
/// failure (ExchangeMachine.upstreamFailed decides).
final class RetryTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private func start() throws -> (TestOrigin, AirlockProcess, RawClient) {
        let o = try TestOrigin(.answerOnceThenDrop { r in .ok("ok \(r.method) \(r.target)") })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1))
        airlock = a
        let c = try RawClient(port: a.port)
        // The first request leaves a kept-alive connection in the pool.
        let first = try c.exchange("GET /warm HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(first.status, 200)
        return (o, a, c)
    }

    func testIdempotentRequestOnADroppedPooledConnectionIsRetriedOnce() throws {
        let (o, _, c) = try start()
        defer { c.close() }
        let r = try c.exchange("GET /again HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "ok GET /again")
        let seen = o.requests.map { "\($0.connectionIndex) \($0.target)" }
        XCTAssertEqual(seen, ["0 /warm", "0 /again", "1 /again"], "dropped on the pooled connection, answered on a new one")
    }

    func testNonIdempotentRequestIsNotRetried() throws {
        let (o, a, c) = try start()
        defer { c.close() }
        let r = try c.exchange("POST /once HTTP/1.1\r\nHost: api.test\r\n\r\n", method: "POST")
        XCTAssertEqual(r.status, 502)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "upstream-closed")
        XCTAssertEqual(o.requests.filter { $0.target == "/once" }.count, 1, "a POST is never sent twice")
        XCTAssertNotNil(a.waitForLog(timeout: 2) { ($0["error"] as? String) == "upstream-closed" })
    }

    func testRequestWithABodyIsNotRetried() throws {
        let (o, _, c) = try start()
        defer { c.close() }
        let r = try c.exchange("PUT /body HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello", method: "PUT")
        XCTAssertEqual(r.status, 502)
        XCTAssertEqual(o.requests.filter { $0.target == "/body" }.count, 1, "a body already sent is not replayed")
    }
}
