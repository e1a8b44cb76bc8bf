import AirlockTesting
import Foundation
import XCTest

/// Tasks (issue #12): every exchange is a task with an id (`X-Request-Id`), a state, progress
/// and metrics; the admin listener lists them (`GET /tasks`), cancels them (`DELETE /tasks…`)
/// and streams their lifecycle (`GET /events`). All on real sockets: an origin on
/// 127.0.0.1:0, the built `airlock`, raw clients and curl.
final class TasksTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    // MARK: helpers

    private func start(_ behavior: TestOrigin.Behavior, limits: [String: String] = [:]) throws -> (AirlockProcess, UInt16) {
        let o = try TestOrigin(behavior)
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: limits) + "\nadmin: 127.0.0.1:0\n")
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return (a, UInt16(try XCTUnwrap(record["port"] as? Int)))
    }

    private func admin(_ port: UInt16, _ method: String, _ path: String) throws -> RawResponse {
        let c = try RawClient(port: port)
        defer { c.close() }
        return try c.exchange("\(method) \(path) HTTP/1.1\r\nHost: admin\r\n\r\n", method: method)
    }

    private func tasks(_ port: UInt16) throws -> (tasks: [[String: Any]], inUse: Int, idle: Int) {
        let r = try admin(port, "GET", "/tasks")
        XCTAssertEqual(r.status, 200)
        let json = Fixture.json(r.body)
        let upstreams = json["upstreams"] as? [String: Any] ?? [:]
        return (json["tasks"] as? [[String: Any]] ?? [], upstreams["in_use"] as? Int ?? -1, upstreams["idle"] as? Int ?? -1)
    }

    /// Polls `GET /tasks` (bounded) until `predicate` holds; returns the last answer.
    @discardableResult
    private func waitForTasks(_ port: UInt16, timeout: Double = 5,
                              _ predicate: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [[String: Any]] = []
        for _ in 0..<500 {
            last = try tasks(port).tasks
            if predicate(last) || Date() > deadline { break }
            usleep(20_000)
        }
        return last
    }

    private static func download(_ t: [String: Any]) -> Int { (t["download"] as? [String: Any])?["bytes"] as? Int ?? -1 }

    /// A GET for a large body, read slowly: a small receive buffer, a few KiB taken at a time.
    private func slowDownload(_ proxyPort: UInt16, id: String) throws -> RawClient {
        let c = try RawClient(port: proxyPort, receiveBufferSize: 8192)
        try c.send("GET /big HTTP/1.1\r\nHost: t\r\nX-Request-Id: \(id)\r\nConnection: close\r\n\r\n")
        _ = try c.read(upTo: 4096, timeout: 5)
        return c
    }

    private func readSome(_ c: RawClient, bytes: Int) throws -> Int {
        var got = 0
        for _ in 0..<10_000 where got < bytes {
            let chunk = try c.read(upTo: 65_536, timeout: 5)
            if chunk.isEmpty { break }
            got += chunk.count
        }
        return got
    }

    static let bigBody = 32 * 1024 * 1024

    // MARK: GET /tasks

    /// A slow download is listed with its state and a download progress that grows as the
    /// client reads; once it completes, the list is empty.
    func testSlowDownloadIsListedWithGrowingProgressThenGone() throws {
        let (a, port) = try start(.respond { _ in TestResponse(body: .pattern(count: Self.bigBody)) })
        let c = try slowDownload(a.port, id: "slow-1")
        defer { c.close() }

        let first = try waitForTasks(port) { $0.contains { $0["id"] as? String == "slow-1" && Self.download($0) > 0 } }
        let t1 = try XCTUnwrap(first.first { $0["id"] as? String == "slow-1" }, "\(first)")
        XCTAssertEqual(t1["method"] as? String, "GET")
        XCTAssertEqual(t1["url"] as? String, "/big")
        XCTAssertEqual(t1["route"] as? String, "api")
        XCTAssertTrue(["receiving", "suspended"].contains(t1["state"] as? String ?? ""), "\(t1)")
        XCTAssertEqual((t1["download"] as? [String: Any])?["expected"] as? Int, Self.bigBody)
        XCTAssertNotNil(t1["age_ms"] as? Double)
        let before = Self.download(t1)
        XCTAssertGreaterThan(before, 0)
        XCTAssertLessThan(before, Self.bigBody, "the client has read almost nothing: the download is held")

        XCTAssertGreaterThan(try readSome(c, bytes: 4 * 1024 * 1024), 0)
        let second = try waitForTasks(port) { ts in ts.contains { $0["id"] as? String == "slow-1" && Self.download($0) > before } }
        let t2 = try XCTUnwrap(second.first { $0["id"] as? String == "slow-1" }, "the task ended too early: \(second)")
        XCTAssertGreaterThan(Self.download(t2), before, "progress grows as the client reads")

        let rest = try c.readUntilClose(timeout: 60)
        XCTAssertGreaterThan(rest.count, Self.bigBody / 2, "the client read the rest, up to the close")
        let after = try waitForTasks(port) { $0.isEmpty }
        XCTAssertTrue(after.isEmpty, "a completed task leaves the table: \(after)")
    }
}
