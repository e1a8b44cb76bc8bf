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

    /// `jsonRoute`: a first route, `/j/…`, whose responses must be JSON (others are rejected).
    private func start(_ behavior: TestOrigin.Behavior, limits: [String: String] = [:],
                       jsonRoute: Bool = false) throws -> (AirlockProcess, UInt16) {
        let o = try TestOrigin(behavior)
        origin = o
        var yaml = Fixture.gatewayConfig(upstreamPort: o.port, limits: limits)
        if jsonRoute {
            yaml = yaml.replacingOccurrences(of: "routes:\n", with: """
                routes:
                  - name: json
                    match: { host: "*", path_prefix: /j/ }
                    upstream: http://127.0.0.1:\(o.port)
                    response: { serializer: json }

                """)
        }
        let a = try Fixture.start(yaml + "\nadmin: 127.0.0.1:0\n")
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

    // MARK: DELETE /tasks

    /// `DELETE /tasks/{id}` ends a download in flight: it answers what it cancelled, the client
    /// sees the close before the body's end, the upstream connection is dropped (not pooled),
    /// and the records say cancelled. `DELETE /tasks` cancels every task; bad or unknown ids
    /// get clear errors.
    func testDeleteCancelsATaskAndTheClientSeesTheClose() throws {
        let (a, port) = try start(.respond { _ in TestResponse(body: .pattern(count: Self.bigBody)) })
        let o = try XCTUnwrap(origin)
        let c = try slowDownload(a.port, id: "doomed-1")
        defer { c.close() }
        try waitForTasks(port) { $0.contains { $0["id"] as? String == "doomed-1" } }

        XCTAssertEqual(try admin(port, "DELETE", "/tasks/nobody-here").status, 404)
        let bad = try admin(port, "DELETE", "/tasks/bad%20id!")
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(Fixture.json(bad.body)["error"] as? String, "bad-task-id")
        XCTAssertEqual(try admin(port, "PUT", "/tasks").status, 405)

        let r = try admin(port, "DELETE", "/tasks/doomed-1")
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let cancelled = Fixture.json(r.body)["cancelled"] as? [[String: Any]] ?? []
        XCTAssertEqual(cancelled.map { $0["id"] as? String }, ["doomed-1"])
        XCTAssertEqual(cancelled.first?["state"] as? String, "cancelled")

        let got = try c.readUntilClose(timeout: 10)
        XCTAssertLessThan(got.count, Self.bigBody, "the client saw the close before the body's end")
        XCTAssertTrue(o.waitForPeerCloses(1, timeout: 5), "the upstream connection was dropped, not parked")
        XCTAssertTrue(try waitForTasks(port) { $0.isEmpty }.isEmpty)
        let pool = try tasks(port)
        XCTAssertEqual(pool.idle, 0, "a cancelled task's upstream never goes back to the pool")
        XCTAssertEqual(pool.inUse, 0, "and is closed, not left open")
        let access = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "request.access" && $0["request_id"] as? String == "doomed-1"
        })
        XCTAssertEqual(access["state"] as? String, "cancelled")
        XCTAssertEqual(access["incomplete"] as? Bool, true)
        XCTAssertNotNil(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "request.error" && $0["request_id"] as? String == "doomed-1" && $0["error"] as? String == "cancelled"
        })

        // Every task at once.
        let c1 = try slowDownload(a.port, id: "all-1")
        let c2 = try slowDownload(a.port, id: "all-2")
        defer { c1.close(); c2.close() }
        try waitForTasks(port) { $0.count == 2 }
        let all = try admin(port, "DELETE", "/tasks")
        XCTAssertEqual(all.status, 200)
        let ids = Set((Fixture.json(all.body)["cancelled"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
        XCTAssertEqual(ids, ["all-1", "all-2"])
        XCTAssertLessThan(try c1.readUntilClose(timeout: 10).count, Self.bigBody)
        XCTAssertLessThan(try c2.readUntilClose(timeout: 10).count, Self.bigBody)
        let none = Fixture.json(try admin(port, "DELETE", "/tasks").body)["cancelled"] as? [Any]
        XCTAssertEqual(none?.count, 0, "nothing left to cancel")
    }

    // MARK: GET /events

    private func openEvents(_ port: UInt16, receiveBuffer: Int? = nil) throws -> RawClient {
        let s = try RawClient(port: port, receiveBufferSize: receiveBuffer)
        try s.send("GET /events HTTP/1.1\r\nHost: admin\r\n\r\n")
        return s
    }

    /// Reads SSE text until `done` says so (bounded in bytes and time).
    private func readEvents(_ s: RawClient, timeout: Double = 10, until done: (String) -> Bool) throws -> String {
        var text = ""
        let deadline = Date().addingTimeInterval(timeout)
        for _ in 0..<100_000 {
            if done(text) || Date() > deadline { break }
            let chunk = try s.read(upTo: 65_536, timeout: max(0.1, deadline.timeIntervalSinceNow))
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    /// Events for one task, parsed from the SSE text: (event name, data object).
    private static func events(_ text: String, id: String) -> [(String, [String: Any])] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var name = "", data = ""
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            let json = Fixture.json(Array(data.utf8))
            return json["id"] as? String == id ? (name, json) : nil
        }
    }

    /// `/events` streams a request's lifecycle: resumed, then completed with its status,
    /// bytes and duration (curl makes the request).
    func testEventsStreamARequestsLifecycle() throws {
        let (a, port) = try start(.respond { _ in .ok("hello events") }, jsonRoute: true)
        let s = try openEvents(port)
        defer { s.close() }
        let head = try readEvents(s) { $0.contains("\r\n\r\n") }
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200"), head)
        XCTAssertTrue(head.lowercased().contains("content-type: text/event-stream"), head)

        var lifecycle: [(String, [String: Any])] = []
        // The subscription is registered on the admin loop: retry until events flow (bounded).
        for attempt in 0..<20 {
            let id = "ev-\(attempt)"
            let r = try Curl.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Request-Id: \(id)",
                                  "http://127.0.0.1:\(a.port)/hello"])
            XCTAssertEqual(r.stdoutString, "200")
            let text = try readEvents(s, timeout: 1) { !Self.events($0, id: id).filter { $0.0 == "completed" }.isEmpty }
            lifecycle = Self.events(text, id: id)
            if !lifecycle.isEmpty { break }
        }
        XCTAssertEqual(lifecycle.map(\.0), ["resumed", "completed"])
        let done = try XCTUnwrap(lifecycle.last?.1)
        XCTAssertEqual(done["status"] as? Int, 200)
        XCTAssertEqual(done["bytes_out"] as? Int, "hello events".utf8.count)
        XCTAssertNotNil(done["duration_ms"] as? Double)
        XCTAssertEqual(done["method"] as? String, "GET")
        XCTAssertEqual(done["url"] as? String, "/hello")

        // A response the route's validator refuses: rejected, with the validator's reason.
        let r = try Curl.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Request-Id: ev-rejected",
                              "http://127.0.0.1:\(a.port)/j/not-json"])
        XCTAssertEqual(r.stdoutString, "502")
        let text = try readEvents(s) { !Self.events($0, id: "ev-rejected").filter { $0.0 == "rejected" }.isEmpty }
        let rejected = Self.events(text, id: "ev-rejected")
        XCTAssertEqual(rejected.map(\.0), ["resumed", "rejected"])
        XCTAssertEqual(rejected.last?.1["route"] as? String, "json")
        XCTAssertEqual(rejected.last?.1["status"] as? Int, 502)
        XCTAssertNotNil(rejected.last?.1["reason"] as? String)
    }

    /// A subscriber that does not read loses events, is told how many, and never slows the
    /// proxy: every request is answered while it sleeps.
    func testASlowSubscriberLosesEventsAndIsToldWhileTheProxyKeepsServing() throws {
        let (a, port) = try start(.respond { _ in .ok(String(repeating: "x", count: 64)) })
        let s = try openEvents(port, receiveBuffer: 4096)
        defer { s.close() }
        _ = try readEvents(s) { $0.contains("\r\n\r\n") }
        usleep(100_000)   // the subscription is registered on the admin loop

        let c = try RawClient(port: a.port)
        defer { c.close() }
        let total = 3000
        var served = 0
        let deadline = Date().addingTimeInterval(60)
        // Long request ids make the events large, so the subscriber's buffers fill sooner.
        let pad = String(repeating: "p", count: 100)
        for i in 0..<total where Date() < deadline {
            let r = try c.exchange("GET /x HTTP/1.1\r\nHost: t\r\nX-Request-Id: slow-sub-\(pad)-\(i)\r\n\r\n")
            if r.status == 200 { served += 1 }
        }
        XCTAssertEqual(served, total, "the proxy kept serving while the subscriber slept")

        let text = try readEvents(s, timeout: 15) { $0.contains("event: lost") && $0.contains("slow-sub-\(pad)-\(total - 1)") }
        let lost = text.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: lost") }
        XCTAssertFalse(lost.isEmpty, "the subscriber is told it lost events")
        let n = lost.compactMap { block -> Int? in
            guard let data = block.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { return nil }
            return Fixture.json(Array(data.dropFirst(6).utf8))["lost"] as? Int
        }.reduce(0, +)
        XCTAssertGreaterThan(n, 0)
        let delivered = text.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: resumed") || $0.hasPrefix("event: completed") }.count
        XCTAssertEqual(delivered + n, 2 * total, "every event was delivered or counted as lost")
        for block in lost {
            let data = Fixture.json(Array((block.split(separator: "\n").first { $0.hasPrefix("data: ") } ?? "").dropFirst(6).utf8))
            let k = try XCTUnwrap(data["lost"] as? Int)
            XCTAssertEqual(data["message"] as? String, "lost \(k) events: this subscriber read too slowly")
        }
    }

    // MARK: X-Request-Id and the access record

    /// A well-formed client id is kept (upstream, response, log, error body); anything else is
    /// replaced by Airlock's, the same everywhere; the upstream's own id never reaches the client.
    func testRequestIDIsKeptOrReplacedBothWays() throws {
        let (a, _) = try start(.respond { _ in TestResponse(headers: [("X-Request-Id", "from-upstream")], body: .bytes(Array("ok".utf8))) })
        let o = try XCTUnwrap(origin)
        func get(_ id: String?) throws -> (RawResponse, String?) {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            let header = id.map { "X-Request-Id: \($0)\r\n" } ?? ""
            let r = try c.exchange("GET /id HTTP/1.1\r\nHost: t\r\n\(header)Connection: close\r\n\r\n")
            let n = o.requests.count
            let seen = o.requests.last?.headers.filter { $0.name.lowercased() == "x-request-id" }.map(\.value)
            XCTAssertEqual(seen?.count, 1, "the upstream sees exactly one id (request \(n))")
            return (r, seen?.first)
        }
        let (kept, keptUp) = try get("client-7.a:b_c")
        XCTAssertEqual(kept.header("X-Request-Id"), "client-7.a:b_c")
        XCTAssertEqual(keptUp, "client-7.a:b_c")

        for bad in ["has space", "quote\"d", String(repeating: "z", count: 129), "slash/x"] {
            let (r, up) = try get(bad)
            let id = try XCTUnwrap(r.header("X-Request-Id"))
            XCTAssertNotEqual(id, bad)
            XCTAssertNotNil(id.range(of: #"^[0-9a-f]+-[0-9]+-[0-9a-f]+$"#, options: .regularExpression), id)
            XCTAssertEqual(up, id, "upstream and client see the same replacement")
            XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" && $0["request_id"] as? String == id })
        }
        let (none, noneUp) = try get(nil)
        XCTAssertEqual(none.header("X-Request-Id"), noneUp)
        XCTAssertEqual(none.headers.filter { $0.0.lowercased() == "x-request-id" }.count, 1, "never the upstream's too")

        // An error answered by Airlock itself carries the id in its header and JSON body.
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let e = try c.exchange("CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\nX-Request-Id: err-id-1\r\n\r\n", method: "CONNECT")
        XCTAssertEqual(e.status, 403)   // connect-denied: the route does not say connect: tunnel
        XCTAssertEqual(e.header("X-Request-Id"), "err-id-1")
        XCTAssertEqual(Fixture.json(e.body)["request_id"] as? String, "err-id-1")
    }

    /// The access record carries the task's timings (ms) and whether the upstream connection
    /// was reused: a new one has connect, a pooled one has none.
    func testAccessRecordHasTimingsAndReused() throws {
        let (a, _) = try start(.respond { _ in .ok("timed") })
        let c = try RawClient(port: a.port)
        defer { c.close() }
        for i in 1...2 {
            XCTAssertEqual(try c.exchange("GET /t HTTP/1.1\r\nHost: t\r\nX-Request-Id: timed-\(i)\r\n\r\n").status, 200)
            _ = origin?.waitForRequests(i, timeout: 5)
        }
        func record(_ id: String) throws -> [String: Any] {
            try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" && $0["request_id"] as? String == id })
        }
        let first = try record("timed-1"), second = try record("timed-2")
        XCTAssertEqual(first["reused"] as? Bool, false)
        XCTAssertEqual(second["reused"] as? Bool, true)
        let t1 = try XCTUnwrap(first["timings"] as? [String: Any])
        let t2 = try XCTUnwrap(second["timings"] as? [String: Any])
        for key in ["connect", "request_sent", "ttfb", "total"] {
            XCTAssertNotNil(t1[key] as? Double, "new connection: \(key) in \(t1)")
        }
        XCTAssertNil(t2["connect"], "a pooled connection is not connected again")
        XCTAssertNil(t2["dns"])
        XCTAssertNil(t1["tls"], "no TLS on a plain upstream")
        for key in ["request_sent", "ttfb", "total"] { XCTAssertNotNil(t2[key] as? Double, key) }
        let ttfb = try XCTUnwrap(t1["ttfb"] as? Double), total = try XCTUnwrap(t1["total"] as? Double)
        XCTAssertLessThanOrEqual(ttfb, total)
        XCTAssertEqual(first["state"] as? String, "completed")
    }

    // MARK: baseline after churn

    private static func descriptorCount(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// 1,000 clients that vanish at random points (mid-head, mid-upload, mid-response) leave
    /// no task, no upstream connection in use and no extra descriptor. Idle pooled upstream
    /// connections may remain (each holds one descriptor): the check is
    /// descriptors == baseline descriptors - baseline idle + idle now.
    func testRandomClientDisconnectsLeaveNothingBehind() throws {
        let (a, port) = try start(.respond { req in
            req.method == "POST" ? .ok("got \(req.body.count)") : TestResponse(body: .pattern(count: 1024 * 1024))
        }, limits: ["upstream_timeout": "5s"])
        // Warm up: one complete exchange of each kind, so lazily opened descriptors exist.
        let warm = try RawClient(port: a.port)
        XCTAssertEqual(try warm.exchange("GET /w HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").status, 200)
        warm.close()
        _ = try tasks(port)

        func settled() throws -> (fds: Int, idle: Int, tasks: Int, inUse: Int) {
            var last = (fds: -1, idle: -1, tasks: -1, inUse: -1)
            for _ in 0..<3 {   // the same reading twice running: the admin's own socket has closed
                let t = try tasks(port)
                usleep(50_000)
                let now = (fds: Self.descriptorCount(a.pid), idle: t.idle, tasks: t.tasks.count, inUse: t.inUse)
                if now == last { return now }
                last = now
            }
            return last
        }
        let base = try settled()
        XCTAssertEqual(base.tasks, 0)
        XCTAssertEqual(base.inUse, 0)

        var rng = SystemRandomNumberGenerator()
        let deadline = Date().addingTimeInterval(120)
        var kinds = [0, 0, 0]
        for i in 0..<1000 where Date() < deadline {
            let c = try RawClient(port: a.port, receiveBufferSize: 4096)
            let kind = Int.random(in: 0..<3, using: &rng)
            kinds[kind] += 1
            switch kind {
            case 0:   // mid-head
                let head = "GET /h\(i) HTTP/1.1\r\nHost: t\r\nX-Pad: \(String(repeating: "a", count: 40))\r\n\r\n"
                try c.send(String(head.prefix(Int.random(in: 1..<(head.count - 1), using: &rng))))
            case 1:   // mid-upload
                try c.send("POST /u\(i) HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
                try c.send([UInt8](repeating: 0x61, count: Int.random(in: 1..<20_000, using: &rng)))
            default:  // mid-response
                try c.send("GET /d\(i) HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = try c.read(upTo: Int.random(in: 1..<16_384, using: &rng), timeout: 5)
            }
            if Bool.random(using: &rng) { usleep(UInt32.random(in: 0..<2000, using: &rng)) }
            c.close()
        }
        XCTAssertEqual(kinds.reduce(0, +), 1000, "all 1,000 disconnects ran within the time bound")

        var after = try settled()
        for _ in 0..<100 where after.tasks != 0 || after.inUse != 0 || after.fds != base.fds - base.idle + after.idle {
            usleep(100_000)
            after = try settled()
        }
        XCTAssertEqual(after.tasks, 0, "no task left")
        XCTAssertEqual(after.inUse, 0, "no upstream connection left in use")
        XCTAssertEqual(after.fds, base.fds - base.idle + after.idle,
                       "descriptors back at baseline, idle pooled upstreams aside (base \(base), after \(after))")
        XCTAssertEqual(try warmAgain(a.port), 200, "still serving")
    }

    private func warmAgain(_ port: UInt16) throws -> Int {
        let c = try RawClient(port: port)
        defer { c.close() }
        return try c.exchange("GET /again HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").status
    }
}
