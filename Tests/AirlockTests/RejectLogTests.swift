import XCTest
@testable import Airlock

/// The in-memory ring of reject records and its JSON, and the admin query parser.
final class RejectLogTests: XCTestCase {
    private func record(_ n: Int, route: String = "api", at millis: Int64 = 1_000_000) -> RejectRecord {
        Self.record(n, route: route, at: millis)
    }

    private static func record(_ n: Int, route: String = "api", at millis: Int64 = 1_000_000) -> RejectRecord {
        RejectRecord(unixMillis: millis, requestID: "id-\(n)", route: route, method: "GET",
                     url: "http://127.0.0.1:9000/\(n)", upstream: "127.0.0.1:9000", status: 500,
                     contentType: n % 2 == 0 ? "text/html" : nil, reason: "unacceptable-status", code: -1011,
                     message: "Request failed: Internal Server Error (500)", underlying: nil,
                     durationMillis: 1.5, mode: "enforce", bodySample: "boom \"\n\u{1}")
    }

    func testKeepsTheLastNOldestFirst() {
        let log = RejectLog(capacity: 3)
        for n in 1...5 { log.append(record(n)) }
        XCTAssertEqual(log.count, 3)
        XCTAssertEqual(log.records().map(\.requestID), ["id-3", "id-4", "id-5"])
        log.append(record(6))
        XCTAssertEqual(log.records().map(\.requestID), ["id-4", "id-5", "id-6"])
    }

    func testZeroCapacityKeepsNothing() {
        let log = RejectLog(capacity: 0)
        log.append(record(1))
        XCTAssertEqual(log.records().count, 0)
    }

    func testFiltersBySideAndBothWithoutOne() {
        let log = RejectLog(capacity: 10)
        log.append(record(1))
        var refused = record(2)
        refused.side = .request
        log.append(refused)
        log.append(record(3))
        XCTAssertEqual(log.records(side: .request).map(\.requestID), ["id-2"])
        XCTAssertEqual(log.records(side: .response).map(\.requestID), ["id-1", "id-3"])
        XCTAssertEqual(log.records().map(\.requestID), ["id-1", "id-2", "id-3"])
        XCTAssertEqual(log.records(route: "api", side: .request).map(\.requestID), ["id-2"])
    }

    func testFiltersBySinceAndRoute() {
        let log = RejectLog(capacity: 10)
        log.append(record(1, route: "a", at: 100))
        log.append(record(2, route: "b", at: 200))
        log.append(record(3, route: "a", at: 300))
        XCTAssertEqual(log.records(sinceUnixMillis: 200).map(\.requestID), ["id-2", "id-3"])
        XCTAssertEqual(log.records(route: "a").map(\.requestID), ["id-1", "id-3"])
        XCTAssertEqual(log.records(sinceUnixMillis: 150, route: "a").map(\.requestID), ["id-3"])
    }

    func testConcurrentAppendsFromManyThreads() {
        let log = RejectLog(capacity: 100)
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for n in 0..<1000 { log.append(Self.record(t * 1000 + n)) }
        }
        XCTAssertEqual(log.count, 100)
        XCTAssertEqual(Set(log.records().map(\.requestID)).count, 100)
    }

    func testJSONIsValidAndEscaped() throws {
        var e = JSONLineEncoder()
        record(2, at: 1_700_000_000_123).appendJSON(to: &e)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(e.bytes)) as? [String: Any])
        XCTAssertEqual(object["time"] as? String, "2023-11-14T22:13:20.123Z")
        XCTAssertEqual(object["body_sample"] as? String, "boom \"\n\u{1}")
        XCTAssertEqual(object["code"] as? Int, -1011)
        XCTAssertEqual(object["content_type"] as? String, "text/html")
        XCTAssertTrue(object["underlying"] is NSNull)
        var odd = JSONLineEncoder()
        record(1).appendJSON(to: &odd)
        let second = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(odd.bytes)) as? [String: Any])
        XCTAssertTrue(second["content_type"] is NSNull)
    }

    func testAdminQuerySplitting() {
        let (path, query) = AdminServer.splitQuery("/rejects?since=10m&route=a%2Db&flag")
        XCTAssertEqual(path, "/rejects")
        XCTAssertEqual(query.map(\.0), ["since", "route", "flag"])
        XCTAssertEqual(query.map(\.1), ["10m", "a-b", ""])
        XCTAssertEqual(AdminServer.splitQuery("/healthz").0, "/healthz")
    }

    func testCLIRejectsPathRefusesBadValues() throws {
        XCTAssertEqual(try AdminClient.rejectsPath(since: "10m", route: "api"), "/rejects?since=10m&route=api")
        XCTAssertEqual(try AdminClient.rejectsPath(since: nil, route: nil), "/rejects")
        XCTAssertThrowsError(try AdminClient.rejectsPath(since: "ten minutes", route: nil))
        XCTAssertThrowsError(try AdminClient.rejectsPath(since: nil, route: "a b"))
        XCTAssertEqual(try AdminClient.rejectsPath(since: nil, route: "api", side: "request"), "/rejects?route=api&side=request")
        XCTAssertEqual(try AdminClient.rejectsPath(since: "1h", route: nil, side: "response"), "/rejects?since=1h&side=response")
        XCTAssertThrowsError(try AdminClient.rejectsPath(since: nil, route: nil, side: "both"))
    }

    func testTableRendering() throws {
        let body = Array(#"{"rejects":[{"time":"t","route":"api","status":500,"reason":"r","url":"http://x/","request_id":"id","extra":1}]}"#.utf8)
        let table = try RejectTable.render(body)
        XCTAssertEqual(table, "TIME  ROUTE  STATUS  REASON  URL        REQUEST ID\nt     api    500     r       http://x/  id\n")
        XCTAssertEqual(try RejectTable.render(Array(#"{"rejects":[]}"#.utf8)), "no rejects\n")
    }
}
