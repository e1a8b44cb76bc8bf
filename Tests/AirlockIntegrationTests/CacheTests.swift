import AirlockTesting
import Foundation
import XCTest

/// Issue #21: a route's response cache (`routes[].cache`, RFC 9111) in front of a real origin,
/// through real clients (RawClient, curl): what is stored and served, what is revalidated,
/// invalidated, collapsed and purged, and what never is.
final class CacheTests: XCTestCase {
    private var origin: TestOrigin?
    private var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    /// An origin answering `respond`, and Airlock (one worker) with a cache on its route.
    private func start(cache: String = "{}", extra: String = "",
                       _ respond: @escaping @Sendable (TestRequest) -> TestResponse) throws -> (TestOrigin, AirlockProcess, UInt16) {
        let o = try TestOrigin(.respond(respond))
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1)
                                  + "\n    cache: \(cache)" + extra + "\nadmin: 127.0.0.1:0\n")
        airlock = a
        return (o, a, try Fixture.adminPort(a))
    }

    private func get(_ a: AirlockProcess, _ path: String, _ fields: String = "", method: String = "GET") throws -> RawResponse {
        let c = try RawClient(port: a.port)
        defer { c.close() }
        return try c.exchange("\(method) \(path) HTTP/1.1\r\nHost: cache.test\r\n\(fields)\r\n", method: method)
    }

    private func admin(_ port: UInt16, _ method: String, _ path: String) throws -> [String: Any] {
        let c = try RawClient(port: port)
        defer { c.close() }
        let r = try c.exchange("\(method) \(path) HTTP/1.1\r\nHost: admin\r\n\r\n", method: method)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        return Fixture.json(r.body)
    }

    private static let fresh: [(String, String)] = [("Cache-Control", "max-age=60"), ("ETag", "\"e1\""),
                                                     ("Content-Type", "text/plain")]

    func testAFreshResponseIsServedFromMemoryWithAgeAndCacheStatus() throws {
        let (o, a, _) = try start { r in TestResponse(headers: Self.fresh, body: .bytes(Array("body of \(r.target)".utf8))) }
        let first = try get(a, "/a")
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200")
        let second = try get(a, "/a")
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(String(decoding: second.body, as: UTF8.self), "body of /a")
        XCTAssertEqual(second.header("ETag"), "\"e1\"")
        XCTAssertNotNil(second.header("Age"))
        XCTAssertTrue(second.header("Cache-Status")?.hasPrefix("Airlock; hit; ttl=") == true, "\(second.header("Cache-Status") ?? "")")
        let head = try get(a, "/a", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty, "HEAD is served from the stored GET, without a body")
        XCTAssertEqual(head.header("Content-Length"), "10")
        XCTAssertEqual(o.requests.map(\.target), ["/a"], "one upstream request for all three")
    }

    /// The origin's hop-by-hop fields and its `Age` reach no client, from the origin or from
    /// memory: a stored head keeps them as they came (RFC 9111 3.1 lets a cache remove them
    /// before forwarding rather than before storage), and a served one drops them; a
    /// `Connection` naming a field makes the store copy the head without it.
    func testHopByHopFieldsAndAgeFromTheOriginReachNoClient() throws {
        let (o, a, _) = try start { r in
            var h: [(String, String)] = [("Cache-Control", "max-age=600"), ("Keep-Alive", "timeout=5, max=100"),
                                         ("Proxy-Connection", "keep-alive"), ("Age", "7"), ("X-Kept", "yes")]
            if r.target == "/named" { h += [("Connection", "X-Hop"), ("X-Hop", "secret")] }
            return TestResponse(headers: h, body: .bytes(Array("stored body".utf8)))
        }
        for path in ["/plain", "/named"] {
            let miss = try get(a, path), hit = try get(a, path), head = try get(a, path, method: "HEAD")
            XCTAssertTrue(miss.header("Cache-Status")?.contains("fwd=uri-miss") == true, "\(path): \(miss.header("Cache-Status") ?? "")")
            XCTAssertTrue(hit.header("Cache-Status")?.hasPrefix("Airlock; hit") == true, "\(path): \(hit.header("Cache-Status") ?? "")")
            for r in [miss, hit, head] {
                XCTAssertEqual(r.status, 200)
                XCTAssertNil(r.header("Keep-Alive"), path)
                XCTAssertNil(r.header("Proxy-Connection"), path)
                XCTAssertNil(r.header("X-Hop"), path)
                XCTAssertNil(r.header("Connection"), "\(path): HTTP/1.1 keep-alive needs none")
                XCTAssertEqual(r.header("X-Kept"), "yes", path)
            }
            XCTAssertEqual(hit.bodyString, "stored body")
            XCTAssertEqual(hit.headers(named: "Age").count, 1, "\(path): one Age, the cache's")
            XCTAssertGreaterThanOrEqual(Int(hit.header("Age") ?? "") ?? -1, 7, "\(path): the origin's Age counted in it")
            XCTAssertEqual(hit.headers(named: "Content-Length"), ["11"], path)
            XCTAssertEqual(head.headers(named: "Content-Length"), ["11"], "\(path): HEAD from the stored GET")
            XCTAssertTrue(head.body.isEmpty)
        }
        XCTAssertEqual(o.requests.map(\.target), ["/plain", "/named"], "each fetched once")
    }

    /// What a shared cache must not keep: each is fetched again.
    func testResponsesAndRequestsThatMustNotBeStoredAreNot() throws {
        let (o, a, _) = try start { r in
            var h: [(String, String)] = [("Content-Type", "text/plain")]
            switch r.target {
            case "/no-store": h.append(("Cache-Control", "no-store, max-age=60"))
            case "/private": h.append(("Cache-Control", "private, max-age=60"))
            case "/cookie": h += [("Cache-Control", "max-age=60"), ("Set-Cookie", "id=1")]
            default: h.append(("Cache-Control", "max-age=60"))   // /auth: asked with Authorization
            }
            return TestResponse(headers: h, body: .bytes(Array("x".utf8)))
        }
        for path in ["/no-store", "/private", "/cookie"] {
            XCTAssertEqual(try get(a, path).status, 200)
            XCTAssertEqual(try get(a, path).status, 200)
        }
        XCTAssertEqual(try get(a, "/auth", "Authorization: Bearer t\r\n").status, 200)
        XCTAssertEqual(try get(a, "/auth", "Authorization: Bearer t\r\n").status, 200)
        XCTAssertEqual(o.requests.map(\.target), ["/no-store", "/no-store", "/private", "/private", "/cookie", "/cookie",
                                                  "/auth", "/auth"])
    }

    /// `Vary`: one stored variant per value of the named request field.
    func testVariantsAreKeyedByTheFieldsVaryNames() throws {
        let (o, a, _) = try start { r in
            TestResponse(headers: Self.fresh + [("Vary", "Accept-Language")],
                         body: .bytes(Array("in \(r.header("Accept-Language") ?? "-")".utf8)))
        }
        XCTAssertEqual(String(decoding: try get(a, "/v", "Accept-Language: de\r\n").body, as: UTF8.self), "in de")
        XCTAssertEqual(String(decoding: try get(a, "/v", "Accept-Language: fr\r\n").body, as: UTF8.self), "in fr")
        XCTAssertEqual(String(decoding: try get(a, "/v", "Accept-Language: de\r\n").body, as: UTF8.self), "in de")
        XCTAssertEqual(String(decoding: try get(a, "/v", "Accept-Language: fr\r\n").body, as: UTF8.self), "in fr")
        XCTAssertEqual(o.requests.count, 2, "one upstream request per variant")
    }

    /// A stale entry (max-age=0) is revalidated with its ETag; the origin's 304 freshens it and
    /// the stored body is served. A request's `no-cache` revalidates a fresh one too.
    func testStaleEntriesAreRevalidatedAndA304ServesTheStoredBody() throws {
        let (o, a, _) = try start { r in
            if r.header("If-None-Match") == "\"e1\"" {
                return TestResponse(status: 304, reason: "Not Modified", headers: [("ETag", "\"e1\""), ("Cache-Control", "max-age=0")])
            }
            return TestResponse(headers: [("Cache-Control", "max-age=0"), ("ETag", "\"e1\"")], body: .bytes(Array("stored".utf8)))
        }
        XCTAssertEqual(try get(a, "/s").status, 200)
        let revalidated = try get(a, "/s")
        XCTAssertEqual(revalidated.status, 200)
        XCTAssertEqual(String(decoding: revalidated.body, as: UTF8.self), "stored")
        XCTAssertEqual(revalidated.header("Cache-Status"), "Airlock; fwd=stale; fwd-status=304")
        XCTAssertEqual(o.requests.last?.header("If-None-Match"), "\"e1\"")
        // The client's own condition is answered from the cache: 304 without a body.
        let conditional = try get(a, "/s", "If-None-Match: \"e1\"\r\n")
        XCTAssertEqual(conditional.status, 304)
        XCTAssertTrue(conditional.body.isEmpty)
        XCTAssertEqual(o.requests.count, 3)
    }

    func testARequestsNoCacheRevalidatesAFreshEntry() throws {
        let (o, a, _) = try start { r in
            if r.header("If-None-Match") != nil { return TestResponse(status: 304, reason: "Not Modified", headers: Self.fresh) }
            return TestResponse(headers: Self.fresh, body: .bytes(Array("fresh".utf8)))
        }
        XCTAssertEqual(try get(a, "/n").status, 200)
        let r = try get(a, "/n", "Cache-Control: no-cache\r\n")
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "fresh")
        XCTAssertEqual(r.header("Cache-Status"), "Airlock; fwd=request; fwd-status=304")
        XCTAssertEqual(o.requests.count, 2)
    }

    /// RFC 9111 4.4: a successful POST to the URL drops what was stored for it.
    func testAnUnsafeMethodInvalidatesTheURL() throws {
        let (o, a, _) = try start { r in TestResponse(headers: Self.fresh, body: .bytes(Array(r.method.utf8))) }
        XCTAssertEqual(try get(a, "/u").status, 200)
        XCTAssertEqual(try get(a, "/u").header("Cache-Status")?.hasPrefix("Airlock; hit") ?? false, true)
        XCTAssertEqual(try get(a, "/u", "Content-Length: 0\r\n", method: "POST").status, 200)
        XCTAssertEqual(try get(a, "/u").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200")
        XCTAssertEqual(o.requests.map(\.method), ["GET", "POST", "GET"])
    }

    /// Concurrent misses of one URL: one upstream request; the others wait for it and are
    /// served what it stored.
    func testConcurrentMissesMakeOneUpstreamRequest() throws {
        let (o, a, _) = try start { _ in
            Thread.sleep(forTimeInterval: 0.5)   // the miss is slow: the others arrive meanwhile
            return TestResponse(headers: Self.fresh, body: .pattern(count: 200_000))
        }
        let expected = try sha256Hex(patternBytes(count: 200_000))
        let group = DispatchGroup()
        let results = Results()
        for _ in 0..<6 {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                let r = try? Curl.run(["-H", "Host: cache.test", "-D", "-", "-o", "/dev/null", "-w", "%{http_code}",
                                       "http://127.0.0.1:\(a.port)/slow"], timeout: 10)
                results.add(r)
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 20), .success)
        let all = results.all
        XCTAssertEqual(all.count, 6)
        for r in all {
            XCTAssertEqual(r?.exitCode, 0)
            XCTAssertTrue(r?.stdoutString.hasSuffix("200") == true, r?.stdoutString ?? "no result")
        }
        XCTAssertEqual(o.requests.count, 1, "one upstream request for six concurrent misses")
        let body = try get(a, "/slow").body
        XCTAssertEqual(try sha256Hex(body), expected)
    }

    /// The request that fills a key fails (the origin closes its connection without answering:
    /// the filler is answered 502): the requests waiting on that fill are released and go
    /// upstream themselves; none hangs.
    func testWaitersOfAFailedFillGoUpstreamThemselves() throws {
        let o = try TestOrigin(.raw { r in
            if r.header("X-Fail") != nil {
                Thread.sleep(forTimeInterval: 0.5)
                return []   // closes without a response
            }
            return Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlate".utf8)
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1) + "\n    cache: {}\n")
        airlock = a
        let filler = try RawClient(port: a.port)
        defer { filler.close() }
        try filler.send("GET /gone HTTP/1.1\r\nHost: cache.test\r\nX-Fail: 1\r\n\r\n")
        XCTAssertTrue(o.waitForRequests(1, timeout: 5), "the fill reached the origin")
        let waiter = try RawClient(port: a.port)
        defer { waiter.close() }
        try waiter.send("GET /gone HTTP/1.1\r\nHost: cache.test\r\n\r\n")
        XCTAssertEqual(try filler.readResponse(timeout: 5).status, 502, "the fill failed")
        let r = try waiter.readResponse(timeout: 5)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "late")
        XCTAssertEqual(o.requestCount, 2, "released, the waiter made its own upstream request")
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [ProcessResult?] = []
        func add(_ r: ProcessResult?) { lock.withLock { items.append(r) } }
        var all: [ProcessResult?] { lock.withLock { items } }
    }

    /// AFAutoPurgingImageCache's rule: 10× `memory` requested, the stored bytes never pass it;
    /// the most recent entries are the ones kept.
    func testMemoryStaysWithinItsBoundWhileTenTimesItIsRequested() throws {
        let (o, a, adminPort) = try start(cache: "{ memory: 1MiB, purge_to: 600KiB, max_object: 200KiB }") { _ in
            TestResponse(headers: Self.fresh, body: .pattern(count: 100_000))
        }
        for i in 0..<100 {   // 100 × ~100 KB = 10 MB
            XCTAssertEqual(try get(a, "/m/\(i)").status, 200)
            if i % 10 == 9 {
                let cache = try admin(adminPort, "GET", "/cache")
                let route = (cache["routes"] as? [[String: Any]])?.first
                XCTAssertLessThanOrEqual(route?["bytes"] as? Int ?? .max, 1 << 20, "after \(i + 1) responses")
            }
        }
        XCTAssertEqual(try get(a, "/m/99").header("Cache-Status")?.hasPrefix("Airlock; hit") ?? false, true, "the latest is kept")
        XCTAssertEqual(try get(a, "/m/0").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200", "the oldest went")
        XCTAssertEqual(o.requests.count, 101)
    }

    /// Past `memory` the store drops only what brings the cache back within it; the worker's
    /// loop purges the rest of the way to `purge_to` in slices on its own turns (the purge of
    /// ~200 small entries here takes two), with no further request to drive it.
    func testAPurgeFinishesInSlicesOnTheLoopWithoutFurtherRequests() throws {
        let (_, a, adminPort) = try start(cache: "{ memory: 256KiB, purge_to: 64KiB, max_object: 4KiB }") { _ in
            TestResponse(headers: Self.fresh, body: .pattern(count: 100))
        }
        func cached() throws -> (bytes: Int, entries: Int) {
            let route = try XCTUnwrap((try admin(adminPort, "GET", "/cache")["routes"] as? [[String: Any]])?.first)
            return (try XCTUnwrap(route["bytes"] as? Int), try XCTUnwrap(route["entries"] as? Int))
        }
        // Stores until one passes `memory` (the entries stop growing by one), then no more requests.
        var stored = 0
        var state = (bytes: 0, entries: 0)
        while stored < 2_000 {
            XCTAssertEqual(try get(a, "/s/\(stored)").status, 200)
            stored += 1
            let now = try cached()
            if now.entries <= state.entries { break }
            XCTAssertEqual(now.entries, stored, "every response stored until memory is passed")
            state = now
        }
        XCTAssertLessThan(stored, 2_000, "the cache passed its memory")
        state = try cached()
        let deadline = ContinuousClock.now + .seconds(10)
        while state.bytes > 64 << 10, ContinuousClock.now < deadline {
            usleep(20_000)
            state = try cached()
        }
        XCTAssertLessThanOrEqual(state.bytes, 64 << 10, "purged to purge_to by the loop alone")
        XCTAssertGreaterThan(state.entries, 0, "down to purge_to, not emptied")
        let evictions = try Fixture.metrics(admin: adminPort).value("airlock_cache_evictions_total", ["route": "api"]) ?? 0
        XCTAssertEqual(Int(evictions), stored - state.entries, "every store not still held was evicted")
        XCTAssertGreaterThan(evictions, 128, "more than one slice")
    }

    /// `GET /cache` of a cache whose listing runs to megabytes (2,500 entries under 3 KB URLs)
    /// arrives whole: it was cut off after 2 s, sent through a 64 KB socket buffer at one
    /// segment per delayed ACK and closed by the linger timer that counted the flush.
    func testALargeListingArrivesWhole() throws {
        let (_, a, adminPort) = try start(cache: "{ memory: 16MiB, purge_to: 8MiB, max_object: 4KiB }") { _ in
            TestResponse(headers: Self.fresh, body: .bytes(Array("x".utf8)))
        }
        let long = String(repeating: "p", count: 3_000)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        for i in 0..<2_500 {
            let r = try c.exchange("GET /\(long)/\(i) HTTP/1.1\r\nHost: cache.test\r\n\r\n")
            XCTAssertEqual(r.status, 200)
        }
        let listing = try admin(adminPort, "GET", "/cache?limit=1000000")
        let route = try XCTUnwrap((listing["routes"] as? [[String: Any]])?.first)
        XCTAssertEqual(route["entries"] as? Int, 2_500)
        XCTAssertEqual(route["truncated"] as? Bool, false)
        let items = try XCTUnwrap(route["items"] as? [[String: Any]])
        XCTAssertEqual(items.count, 2_500, "every entry listed")
        XCTAssertEqual(Set(items.compactMap { $0["url"] as? String }).count, 2_500)
        XCTAssertEqual(items.first?["url"] as? String, "http://cache.test/\(long)/2499", "the most recently used first")

        // By default the 1,000 most recently used, and the count of all.
        let first = try XCTUnwrap((try admin(adminPort, "GET", "/cache")["routes"] as? [[String: Any]])?.first)
        XCTAssertEqual(first["entries"] as? Int, 2_500)
        XCTAssertEqual(first["truncated"] as? Bool, true)
        XCTAssertEqual((first["items"] as? [[String: Any]])?.compactMap { $0["url"] as? String },
                       items.prefix(1_000).compactMap { $0["url"] as? String })
        XCTAssertEqual(((try admin(adminPort, "GET", "/cache?limit=2")["routes"] as? [[String: Any]])?.first?["items"] as? [Any])?.count, 2)
        for bad in ["-1", "abc", "1000001", "", "99999999999999999999"] {
            let c = try RawClient(port: adminPort)
            defer { c.close() }
            let r = try c.exchange("GET /cache?limit=\(bad) HTTP/1.1\r\nHost: admin\r\n\r\n")
            XCTAssertEqual(r.status, 400, "limit=\(bad)")
            XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "bad-query", "limit=\(bad)")
        }
    }

    /// `DELETE /cache` and a reload empty the caches at once (their entries are freed in slices
    /// on the workers' loops afterwards): the next GET is a miss, and Airlock keeps serving.
    func testDeleteAndReloadEmptyTheCacheAtOnce() throws {
        let (o, a, adminPort) = try start { r in TestResponse(headers: Self.fresh, body: .bytes(Array("body of \(r.target)".utf8))) }
        func fill() throws {
            for i in 0..<300 { XCTAssertEqual(try get(a, "/e/\(i)").status, 200) }
            XCTAssertEqual(try get(a, "/e/0").header("Cache-Status")?.hasPrefix("Airlock; hit"), true)
        }
        func entries() throws -> Int? {
            ((try admin(adminPort, "GET", "/cache")["routes"] as? [[String: Any]])?.first?["entries"] as? Int)
        }
        try fill()
        XCTAssertEqual(try entries(), 300)
        XCTAssertEqual(try admin(adminPort, "DELETE", "/cache")["removed"] as? Int, 300)
        XCTAssertEqual(try entries(), 0, "nothing listed at once")
        XCTAssertEqual(try get(a, "/e/0").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200", "a miss at once")

        try fill()
        a.signal(SIGHUP)
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.reloaded" })
        XCTAssertEqual(try get(a, "/e/1").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200", "a reload empties it")
        XCTAssertEqual(try entries(), 1)
        for i in 0..<300 { XCTAssertEqual(try get(a, "/e/\(i)").status, 200) }   // still serving, storing again
        XCTAssertEqual(try entries(), 300)
        XCTAssertEqual(o.requests.count, 300 + 1 + 299 + 1 + 299, "every miss went upstream once, every hit not")
    }

    /// A fill in flight across a reload ends in the cache it began in (emptied by the reload),
    /// not in one made again from the route as it was: the route's cache after the reload is
    /// made from the new configuration (here a `max_object` too small for the response), so
    /// the response is not stored and the next GET goes upstream.
    func testAFillInFlightAcrossAReloadDoesNotBringBackTheOldCache() throws {
        let (o, a, adminPort) = try start(cache: "{ max_object: 4MiB }") { r in
            if r.target == "/slow" { Thread.sleep(forTimeInterval: 1.0) }   // in flight while the reload happens
            return TestResponse(headers: Self.fresh, body: .bytes(Array("body of \(r.target)".utf8)))
        }
        XCTAssertEqual(try get(a, "/warm").status, 200)   // the route's cache exists before the reload
        let slow = Results()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            defer { group.leave() }
            slow.add(try? Curl.run(["-sS", "-H", "Host: cache.test", "-D", "-", "-o", "/dev/null",
                                    "http://127.0.0.1:\(a.port)/slow"], timeout: 10))
        }
        Thread.sleep(forTimeInterval: 0.3)   // the request is at the origin
        let config = try String(contentsOfFile: a.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "cache: { max_object: 4MiB }", with: "cache: { max_object: 10 }")
            .write(toFile: a.configPath, atomically: true, encoding: .utf8)
        a.signal(SIGHUP)
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.reloaded" })
        XCTAssertEqual(group.wait(timeout: .now() + 15), .success)
        XCTAssertTrue(slow.all.first??.stdoutString.contains("Cache-Status: Airlock; fwd=uri-miss; fwd-status=200\r\n") == true,
                      slow.all.first??.stdoutString ?? "no result")
        let after = try get(a, "/slow")
        XCTAssertEqual(after.status, 200)
        XCTAssertEqual(after.header("Cache-Status")?.hasPrefix("Airlock; fwd=uri-miss; fwd-status=200"), true,
                       "the reloaded route's cache (max_object 10) neither holds nor stores it: \(after.header("Cache-Status") ?? "-")")
        XCTAssertEqual(after.header("Cache-Status")?.contains("stored"), false)
        XCTAssertEqual(o.requests.filter { $0.target == "/slow" }.count, 2)
        let listed = try admin(adminPort, "GET", "/cache")["routes"] as? [[String: Any]]
        XCTAssertEqual(listed?.first?["entries"] as? Int, 0, "\(listed ?? [])")
    }

    /// A response the route's validation rejects is never stored, even in report-only mode
    /// where the client gets it.
    func testARejectedResponseIsNeverStored() throws {
        let (o, a, _) = try start(extra: """

                response:
                  serializer: json
                  mode: report-only
            """) { r in
            TestResponse(headers: [("Cache-Control", "max-age=60"), ("Content-Type", "application/json")],
                         body: .bytes(Array((r.target == "/json" ? "{\"ok\":true}" : "not json").utf8)))
        }
        XCTAssertEqual(try get(a, "/bad").status, 200)
        XCTAssertEqual(try get(a, "/bad").status, 200)
        XCTAssertEqual(try get(a, "/json").status, 200)
        XCTAssertEqual(try get(a, "/json").header("Cache-Status")?.hasPrefix("Airlock; hit") ?? false, true)
        XCTAssertEqual(o.requests.map(\.target), ["/bad", "/bad", "/json"])
    }

    /// `GET /cache` lists what is stored; `DELETE /cache?url=` and `DELETE /cache` remove it;
    /// `only-if-cached` with nothing stored is 504 not-cached; the counters reach /metrics.
    func testTheAdminListsAndRemovesEntriesAndOnlyIfCachedIsAnswered() throws {
        try PrometheusText.requireParser()
        let (o, a, adminPort) = try start { _ in TestResponse(headers: Self.fresh, body: .bytes(Array("x".utf8))) }
        XCTAssertEqual(try get(a, "/one").status, 200)
        XCTAssertEqual(try get(a, "/two").status, 200)
        XCTAssertEqual(try get(a, "/one").status, 200)
        let listing = try admin(adminPort, "GET", "/cache")
        let route = try XCTUnwrap((listing["routes"] as? [[String: Any]])?.first)
        XCTAssertEqual(route["entries"] as? Int, 2)
        XCTAssertEqual(route["hits"] as? Int, 1)
        XCTAssertEqual(Set((route["items"] as? [[String: Any]])?.compactMap { $0["url"] as? String } ?? []),
                       ["http://cache.test/one", "http://cache.test/two"])
        XCTAssertEqual(try admin(adminPort, "DELETE", "/cache?url=http://cache.test/one")["removed"] as? Int, 1)
        XCTAssertEqual(try get(a, "/one").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200")
        XCTAssertEqual(try admin(adminPort, "DELETE", "/cache")["removed"] as? Int, 2)
        let notCached = try get(a, "/two", "Cache-Control: only-if-cached\r\n")
        XCTAssertEqual(notCached.status, 504)
        XCTAssertEqual(Fixture.json(notCached.body)["error"] as? String, "not-cached")
        XCTAssertEqual(o.requests.count, 3)
        let metrics = try Fixture.metrics(admin: adminPort)
        XCTAssertEqual(metrics.value("airlock_cache_hits_total", ["route": "api"]), 1)
        XCTAssertEqual(metrics.value("airlock_cache_misses_total", ["route": "api"]), 4)
        XCTAssertEqual(metrics.value("airlock_cache_stores_total", ["route": "api"]), 3)
    }

    /// Each route has its own cache on a worker: what one route stores is listed, counted and
    /// served under that route only, with two cached routes on one worker.
    func testEachRouteHasItsOwnCache() throws {
        let o = try TestOrigin(.respond { r in TestResponse(headers: Self.fresh, body: .bytes(Array("body of \(r.target)".utf8))) })
        origin = o
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:0
            routes:
              - name: one
                match: { host: "one.test" }
                upstream: http://127.0.0.1:\(o.port)
                cache: {}
              - name: two
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
                cache: { memory: 2MiB, purge_to: 1MiB, max_object: 64KiB }
            """)
        airlock = a
        let adminPort = try Fixture.adminPort(a)
        func get(_ host: String, _ path: String) throws -> RawResponse {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            return try c.exchange("GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        }
        XCTAssertEqual(try get("one.test", "/a").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200")
        XCTAssertEqual(try get("two.test", "/b").header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200")
        XCTAssertEqual(try get("one.test", "/a").header("Cache-Status")?.hasPrefix("Airlock; hit;"), true)
        XCTAssertEqual(try get("two.test", "/b").header("Cache-Status")?.hasPrefix("Airlock; hit;"), true)
        XCTAssertEqual(try get("two.test", "/b").header("Cache-Status")?.hasPrefix("Airlock; hit;"), true)
        XCTAssertEqual(o.requests.count, 2)
        let routes = try XCTUnwrap(admin(adminPort, "GET", "/cache")["routes"] as? [[String: Any]])
        var byName: [String: [String: Any]] = [:]
        for r in routes { if let name = r["route"] as? String { byName[name] = r } }
        XCTAssertEqual(Set(byName.keys), ["one", "two"], "\(routes)")
        XCTAssertEqual((byName["one"]?["items"] as? [[String: Any]])?.compactMap { $0["url"] as? String }, ["http://one.test/a"])
        XCTAssertEqual((byName["two"]?["items"] as? [[String: Any]])?.compactMap { $0["url"] as? String }, ["http://two.test/b"])
        XCTAssertEqual(byName["one"]?["hits"] as? Int, 1)
        XCTAssertEqual(byName["two"]?["hits"] as? Int, 2)
        let metrics = try Fixture.metrics(admin: adminPort)
        XCTAssertEqual(metrics.value("airlock_cache_hits_total", ["route": "one"]), 1)
        XCTAssertEqual(metrics.value("airlock_cache_hits_total", ["route": "two"]), 2)
        XCTAssertEqual(metrics.value("airlock_cache_stores_total", ["route": "one"]), 1)
        XCTAssertEqual(metrics.value("airlock_cache_stores_total", ["route": "two"]), 1)
    }
}
