import AirlockSession
import AirlockWire
import XCTest

/// The response cache's decisions with no sockets and a clock the test holds (issue #21, RFC
/// 9111 and 9211): each test asserts the exact decision one rule makes.
final class ResponseCacheTests: XCTestCase {
    /// Thu, 26 Nov 2026 10:00:00 GMT.
    private let t0: Int64 = 1_795_687_200
    private let date0 = "Date: Thu, 26 Nov 2026 10:00:00 GMT"
    private let url = "http://o.test/a"

    private func get(_ path: String = "/a", _ fields: String...) -> RequestHead {
        let lines = ["GET \(path) HTTP/1.1", "Host: o.test"] + fields
        return requestHead(lines.joined(separator: "\r\n"))
    }

    private func request(_ method: String, _ path: String = "/a", _ fields: String...) -> RequestHead {
        let lines = ["\(method) \(path) HTTP/1.1", "Host: o.test"] + fields
        return requestHead(lines.joined(separator: "\r\n"))
    }

    private func ok(_ fields: String...) -> ResponseHead {
        responseHead((["HTTP/1.1 200 OK"] + fields).joined(separator: "\r\n"))
    }

    private func forward(_ lookup: ResponseCache.Lookup, file: StaticString = #filePath, line: UInt = #line) -> ResponseCache.Fill? {
        guard case .forward(let fill) = lookup else {
            XCTFail("expected forward, got \(lookup)", file: file, line: line)
            return nil
        }
        return fill
    }

    private func hit(_ lookup: ResponseCache.Lookup, file: StaticString = #filePath, line: UInt = #line) -> ResponseCache.Hit? {
        guard case .hit(let hit) = lookup else {
            XCTFail("expected hit, got \(lookup)", file: file, line: line)
            return nil
        }
        return hit
    }

    /// Looks `request` up (a miss expected), answers it with `response` and `body` at `now`.
    @discardableResult
    private func fill(_ cache: inout ResponseCache, _ request: RequestHead, _ response: ResponseHead, body: [UInt8] = Array("hello".utf8),
                      at now: Int64, url: String? = nil, validated: Bool = true,
                      file: StaticString = #filePath, line: UInt = #line) -> ResponseCache.Completion? {
        let u = url ?? CacheKey.url(scheme: .http, request: request)!
        guard let f = forward(cache.lookup(url: u, request: request, now: now), file: file, line: line) else { return nil }
        return cache.complete(f, request: request, response: response, body: body, validated: validated, now: now)
    }

    private func isStored(_ c: ResponseCache.Completion?) -> Bool {
        if case .stored = c?.outcome { return true }
        return false
    }

    private func refusal(_ c: ResponseCache.Completion?) -> CacheRefusal? {
        if case .notStored(let r) = c?.outcome { return r }
        return nil
    }

    // MARK: keys

    func testURLKeyNormalisesSchemeHostAndDefaultPort() {
        XCTAssertEqual(CacheKey.url(scheme: .http, request: get("/a?q=1")), "http://o.test/a?q=1")
        XCTAssertEqual(CacheKey.url(scheme: .http, request: requestHead("GET /a HTTP/1.1\r\nHost: O.TEST:80")), "http://o.test/a")
        XCTAssertEqual(CacheKey.url(scheme: .http, request: requestHead("GET http://O.test:80/a HTTP/1.1\r\nHost: x")), "http://o.test/a")
        XCTAssertEqual(CacheKey.url(scheme: .https, request: requestHead("GET /a HTTP/1.1\r\nHost: o.test:8443")), "https://o.test:8443/a")
        XCTAssertNil(CacheKey.url(scheme: .http, request: requestHead("CONNECT o.test:443 HTTP/1.1\r\nHost: o.test:443")))
        XCTAssertEqual(CacheKey.url(scheme: .http, request: RequestHead(method: .get, target: .origin(path: "/a"), host: "O.Test")),
                       "http://o.test/a", "a head built by hand is lower-cased too")
    }

    /// GET and HEAD share the key: a HEAD is served from a stored GET; a HEAD's own response is
    /// not stored (it has no body for a later GET) and does not become a fill.
    func testHEADIsServedFromAStoredGETAndNeverStored() throws {
        var cache = ResponseCache()
        let head = request("HEAD")
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: head, now: t0)))
        XCTAssertFalse(f.collapses)
        XCTAssertEqual(cache.fillsInFlight, 0)
        XCTAssertEqual(refusal(cache.complete(f, request: head, response: ok(date0, "Cache-Control: max-age=60", "Content-Length: 5"),
                                              body: [], validated: true, now: t0)), .method)
        XCTAssertTrue(isStored(fill(&cache, get(), ok(date0, "Cache-Control: max-age=60"), at: t0)))
        let served = try XCTUnwrap(hit(cache.lookup(url: url, request: head, now: t0 + 1)))
        XCTAssertEqual(served.head.headers.first(.contentLength), "5")
        XCTAssertEqual(served.body, Array("hello".utf8), "the executor writes no body for HEAD")
    }

    func testRangeRequestsBypassAndOtherMethodsAreFwdMethod() {
        var cache = ResponseCache()
        guard case .bypass(let status) = cache.lookup(url: url, request: get("/a", "Range: bytes=0-1"), now: t0) else {
            return XCTFail("expected bypass")
        }
        XCTAssertEqual(status.fieldValue, "Airlock; fwd=bypass")
        guard case .bypass(let post) = cache.lookup(url: url, request: request("POST", "/a", "Content-Length: 0"), now: t0) else {
            return XCTFail("expected bypass")
        }
        XCTAssertEqual(post.fieldValue, "Airlock; fwd=method")
    }

    // MARK: miss, store, hit

    func testMissIsStoredThenServedWithAgeAndCacheStatus() throws {
        var cache = ResponseCache()
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0)))
        XCTAssertEqual(f.forward, .uriMiss)
        XCTAssertEqual(f.conditionalFields, [])
        let upstream = ok(date0, "Cache-Control: max-age=60", "Transfer-Encoding: chunked", "Connection: close, X-Hop",
                          "X-Hop: 1", "Keep-Alive: timeout=5", "X-Kept: yes")
        let done = cache.complete(f, request: get(), response: upstream, body: Array("hello".utf8), validated: true, now: t0)
        XCTAssertTrue(isStored(done))
        XCTAssertEqual(done.status.fieldValue, "Airlock; fwd=uri-miss; fwd-status=200; stored")
        XCTAssertEqual(done.waiters, 0)

        let served = try XCTUnwrap(hit(cache.lookup(url: url, request: get(), now: t0 + 10)))
        XCTAssertEqual(served.status.fieldValue, "Airlock; hit; ttl=50")
        XCTAssertEqual(served.body, Array("hello".utf8))
        XCTAssertEqual(served.head.headers.values(name: "age"), ["10"])
        XCTAssertEqual(served.head.headers.first(.contentLength), "5")
        XCTAssertEqual(served.head.declaredFraming, .length(5))
        for hop in ["transfer-encoding", "connection", "x-hop", "keep-alive"] {
            XCTAssertEqual(served.head.headers.values(name: hop), [], "\(hop) is hop-by-hop: never stored")
        }
        XCTAssertEqual(served.head.headers.values(name: "x-kept"), ["yes"])
        XCTAssertEqual(cache.counters.hits, 1)
        XCTAssertEqual(cache.counters.hitBytes, 5)
        XCTAssertEqual(cache.counters.misses, 1)
        XCTAssertEqual(cache.counters.stores, 1)
    }

    func testRejectedResponseIsNeverStored() throws {
        var cache = ResponseCache()
        XCTAssertEqual(refusal(fill(&cache, get(), ok(date0, "Cache-Control: max-age=60"), at: t0, validated: false)), .rejected)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 1))).forward, .uriMiss)
    }

    /// `max_object` bounds the entry's bytes as counted against `memory` (body and stored head).
    func testEntriesOverMaxObjectAreNotStored() throws {
        var cache = ResponseCache(limits: .init(memory: 10_000, purgeTo: 5_000, maxObject: 1_000))
        let response = ok(date0, "Cache-Control: max-age=600")
        XCTAssertTrue(isStored(fill(&cache, get("/p1"), response, body: [UInt8](repeating: 1, count: 100), at: t0)))
        let head = try XCTUnwrap(cache.listing(now: t0).first).bytes - 100   // the same for any 3-digit length and 3-byte path
        XCTAssertEqual(refusal(fill(&cache, get("/p2"), response, body: [UInt8](repeating: 1, count: 1_001 - head), at: t0)),
                       .tooLarge)
        XCTAssertTrue(isStored(fill(&cache, get("/p3"), response, body: [UInt8](repeating: 1, count: 1_000 - head), at: t0)))
        XCTAssertEqual(cache.listing(now: t0).first?.bytes, 1_000, "exactly max_object is stored")
    }

    // MARK: storable (RFC 9111 3, 3.5)

    func testStorableRules() {
        let fresh = "Cache-Control: max-age=60"
        let cases: [(String, RequestHead, ResponseHead, CacheRefusal?)] = [
            ("GET 200 max-age", get(), ok(fresh), nil),
            ("POST", request("POST", "/a", "Content-Length: 0"), ok(fresh), .method),
            ("HEAD", request("HEAD"), ok(fresh), .method),
            ("206", get(), responseHead("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1/2\r\n\(fresh)"), .status),
            ("304", get(), responseHead("HTTP/1.1 304 Not Modified\r\n\(fresh)"), .status),
            ("302 without freshness", get(), responseHead("HTTP/1.1 302 Found\r\nETag: \"x\""), .status),
            ("302 with max-age", get(), responseHead("HTTP/1.1 302 Found\r\n\(fresh)"), nil),
            ("500 with a validator only", get(), responseHead("HTTP/1.1 500 Oops\r\nETag: \"x\""), .status),
            ("404 with a validator only", get(), responseHead("HTTP/1.1 404 Not Found\r\nETag: \"x\""), nil),
            ("response no-store", get(), ok("Cache-Control: max-age=60, no-store"), .noStore),
            ("request no-store", get("/a", "Cache-Control: no-store"), ok(fresh), .noStore),
            ("private", get(), ok("Cache-Control: private, max-age=60"), .private),
            ("Authorization", get("/a", "Authorization: Bearer t"), ok(fresh), .authorization),
            ("Authorization + public", get("/a", "Authorization: Bearer t"), ok("Cache-Control: public, max-age=60"), nil),
            ("Authorization + s-maxage", get("/a", "Authorization: Bearer t"), ok("Cache-Control: s-maxage=60"), nil),
            ("Authorization + must-revalidate", get("/a", "Authorization: Bearer t"), ok("Cache-Control: max-age=60, must-revalidate"), nil),
            ("Set-Cookie", get(), ok(fresh, "Set-Cookie: sid=1"), .setCookie),
            ("Vary *", get(), ok(fresh, "Vary: Accept, *"), .varyStar),
            ("no freshness, no validator", get(), ok(date0), .noFreshness),
            ("no freshness, an ETag: stored to revalidate", get(), ok(date0, "ETag: \"x\""), nil),
            ("Expires in the past, Last-Modified", get(), ok(date0, "Expires: 0", "Last-Modified: Thu, 26 Nov 2026 09:00:00 GMT"), nil),
        ]
        for (name, request, response, expected) in cases {
            XCTAssertEqual(ResponseCache.refusal(request: request, response: response), expected, name)
        }
        for status in ResponseCache.heuristicallyCacheable.sorted() {
            XCTAssertNil(ResponseCache.refusal(request: get(), response: responseHead("HTTP/1.1 \(status) X\r\nETag: \"x\"")), "\(status)")
        }
    }

    // MARK: freshness and age (RFC 9111 4.2)

    func testFreshnessLifetimePrefersSMaxAgeThenMaxAgeThenExpires() {
        let expires = "Expires: Thu, 26 Nov 2026 10:02:00 GMT"   // Date + 120
        func lifetime(_ r: ResponseHead, heuristic: Int? = nil) -> Int64 {
            ResponseCache.freshnessLifetime(r, responseTime: t0 + 7, heuristicPercent: heuristic)
        }
        XCTAssertEqual(lifetime(ok(date0, "Cache-Control: max-age=60, s-maxage=30", expires)), 30)
        XCTAssertEqual(lifetime(ok(date0, "Cache-Control: max-age=60", expires)), 60)
        XCTAssertEqual(lifetime(ok(date0, expires)), 120)
        XCTAssertEqual(lifetime(ok(expires)), 113, "no Date: Expires minus the response time")
        XCTAssertEqual(lifetime(ok(date0, "Expires: 0")), 0, "an invalid Expires is already expired")
        XCTAssertEqual(lifetime(ok(date0, expires, expires)), 0, "a repeated Expires too")
        XCTAssertEqual(lifetime(ok(date0, "Expires: Thu, 26 Nov 2026 09:00:00 GMT")), 0)
        let modified = ok(date0, "Last-Modified: Thu, 26 Nov 2026 09:43:20 GMT")   // 1000 s before Date
        XCTAssertEqual(lifetime(modified), 0, "no heuristic freshness unless configured")
        XCTAssertEqual(lifetime(modified, heuristic: 10), 100)
        XCTAssertEqual(lifetime(responseHead("HTTP/1.1 302 Found\r\n\(date0)\r\nLast-Modified: Thu, 26 Nov 2026 09:43:20 GMT"), heuristic: 10), 0,
                       "302 is not heuristically cacheable")
    }

    func testCurrentAgeFollowsRFC9111Section4_2_3() {
        // Sent at t0-2, received at t0 with Date t0-5 and Age 30: corrected_age_value 32 > apparent 5.
        let r = ok("Date: Thu, 26 Nov 2026 09:59:55 GMT", "Age: 30")
        XCTAssertEqual(ResponseCache.currentAge(r.headers, requestTime: t0 - 2, responseTime: t0, now: t0 + 10), 42)
        // No Age: the apparent age (the Date is 50 s behind) wins over the 2 s delay.
        let behind = ok("Date: Thu, 26 Nov 2026 09:59:10 GMT")
        XCTAssertEqual(ResponseCache.currentAge(behind.headers, requestTime: t0 - 2, responseTime: t0, now: t0), 50)
        // An invalid Age is ignored; a Date in the future gives no negative age.
        let odd = ok("Date: Thu, 26 Nov 2026 10:05:00 GMT", "Age: soon")
        XCTAssertEqual(ResponseCache.currentAge(odd.headers, requestTime: t0, responseTime: t0, now: t0 + 3), 3)
        XCTAssertEqual(ResponseCache.currentAge(ok("Age: 7, 90").headers, requestTime: t0, responseTime: t0, now: t0), 7,
                       "the first member of a list-valued Age")
    }

    func testUpstreamAgeCountsTowardsStaleness() throws {
        var cache = ResponseCache()
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=60", "Age: 20"), at: t0)
        let served = try XCTUnwrap(hit(cache.lookup(url: url, request: get(), now: t0 + 10)))
        XCTAssertEqual(served.head.headers.values(name: "age"), ["30"], "the upstream's Age is replaced, not repeated")
        XCTAssertEqual(served.status.ttl, 30)
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 40))).forward, .stale)
    }

    // MARK: validation (RFC 9111 4.3)

    private let lastModified = "Last-Modified: Thu, 26 Nov 2026 09:00:00 GMT"

    /// Bodies up to `inlineBodyLimit` live in the entry's block (after its key, reason and
    /// fields), larger ones beside it: each served byte for byte either way, also after a 304
    /// made the entry again, and with fields of several sizes before it.
    func testBodiesInAndBesideTheEntrysBlockAreServedExactly() throws {
        var cache = ResponseCache(limits: .init(memory: 1 << 20, purgeTo: 1 << 19, maxObject: 1 << 19))
        let limit = ResponseCache.Entry.inlineBodyLimit
        for (i, size) in [0, 1, 7, limit - 1, limit, limit + 1, 70_000].enumerated() {
            let path = "/b\(i)" + String(repeating: "x", count: i)   // keys of several lengths
            let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            let head = ok(date0, "Cache-Control: max-age=10", "ETag: \"e\(i)\"", "X-Pad: " + String(repeating: "p", count: i * 3))
            XCTAssertTrue(isStored(fill(&cache, get(path), head, body: body, at: t0)), "\(size)")
            let u = "http://o.test" + path
            let served = try XCTUnwrap(hit(cache.lookup(url: u, request: get(path), now: t0 + 1)))
            XCTAssertEqual(served.body, body, "\(size)")
            XCTAssertEqual(served.bodyCount, size)
            XCTAssertEqual(served.withBody { Array($0) }, body, "\(size): in place")
            XCTAssertEqual(served.largeBody != nil, size > limit, "\(size): by reference only when over the limit")
            XCTAssertEqual(served.head.headers.first(name: "x-pad")?.count, i * 3)
            let f = try XCTUnwrap(forward(cache.lookup(url: u, request: get(path), now: t0 + 20)))
            let done = cache.complete(f, request: get(path), response: responseHead("HTTP/1.1 304 Not Modified\r\nETag: \"e\(i)\""),
                                      body: [], validated: true, now: t0 + 20)
            guard case .refreshed(let again) = done.outcome else { return XCTFail("\(size): refreshed, got \(done.outcome)") }
            XCTAssertEqual(again.body, body, "\(size): after a 304")
            XCTAssertEqual(try XCTUnwrap(hit(cache.lookup(url: u, request: get(path), now: t0 + 21))).body, body)
        }
    }

    /// A 304's fields count: the freshened entry's bytes are recounted, bounded by `max_object`
    /// (one grown past it is served this once and dropped) and by `memory` (a refresh purges).
    func testA304ThatGrowsAnEntryIsBoundedLikeAStore() throws {
        var cache = ResponseCache(limits: .init(memory: 4_000, purgeTo: 3_000, maxObject: 2_000))
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=10", "ETag: \"v1\""), body: [UInt8](repeating: 1, count: 1_000),
             at: t0)
        let before = try XCTUnwrap(cache.listing(now: t0).first).bytes
        func revalidate(_ name: String, adding extra: Int, at now: Int64) throws -> ResponseCache.Completion {
            let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: now)))
            let notModified = responseHead("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=10\r\n"
                                           + name + ": " + String(repeating: "p", count: extra))
            return cache.complete(f, request: get(), response: notModified, body: [], validated: true, now: now)
        }
        guard case .refreshed = try revalidate("X-Pad", adding: 100, at: t0 + 20).outcome else { return XCTFail("a small 304: refreshed") }
        let grown = try XCTUnwrap(cache.listing(now: t0 + 20).first).bytes
        XCTAssertGreaterThanOrEqual(grown, before + 100, "the 304's field is counted")
        XCTAssertEqual(cache.bytes, grown)
        let done = try revalidate("X-More", adding: 2_000 - grown, at: t0 + 40)
        guard case .refreshed(let served) = done.outcome else { return XCTFail("served this once, got \(done.outcome)") }
        XCTAssertEqual(served.body.count, 1_000)
        XCTAssertEqual(cache.count, 0, "grown past max_object: no longer kept")
        XCTAssertEqual(cache.bytes, 0)
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 41))).forward, .uriMiss)
    }

    func testStaleEntryIsRevalidatedAndA304FreshensIt() throws {
        var cache = ResponseCache()
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=10", "ETag: \"v1\"", lastModified, "X-Version: 1", "X-Other: a"),
             at: t0)
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 20)))
        XCTAssertEqual(f.forward, .stale)
        XCTAssertTrue(f.revalidates)
        XCTAssertEqual(f.conditionalFields, [CacheField(name: "If-None-Match", value: "\"v1\""),
                                             CacheField(name: "If-Modified-Since", value: "Thu, 26 Nov 2026 09:00:00 GMT")])
        XCTAssertEqual(cache.counters.revalidations, 1)
        let notModified = responseHead("HTTP/1.1 304 Not Modified\r\nDate: Thu, 26 Nov 2026 10:00:20 GMT\r\nETag: \"v1\"\r\n"
                                       + "Cache-Control: max-age=100\r\nX-Version: 2\r\nContent-Length: 0\r\nConnection: close")
        let done = cache.complete(f, request: get(), response: notModified, body: [], validated: true, now: t0 + 20)
        guard case .refreshed(let served) = done.outcome else { return XCTFail("expected refreshed, got \(done.outcome)") }
        XCTAssertEqual(done.status.fieldValue, "Airlock; fwd=stale; fwd-status=304")
        XCTAssertEqual(served.body, Array("hello".utf8))
        XCTAssertEqual(served.head.status, 200)
        XCTAssertEqual(served.head.headers.values(name: "x-version"), ["2"], "the 304's field replaces every stored one")
        XCTAssertEqual(served.head.headers.values(name: "x-other"), ["a"], "fields the 304 lacks are kept")
        XCTAssertEqual(served.head.headers.values(name: "cache-control"), ["max-age=100"])
        XCTAssertEqual(served.head.headers.values(name: "content-length"), ["5"], "never the 304's Content-Length")
        XCTAssertEqual(served.head.headers.values(name: "connection"), [])
        XCTAssertEqual(served.head.headers.values(name: "age"), ["0"])
        XCTAssertEqual(cache.counters.refreshed, 1)
        let again = try XCTUnwrap(hit(cache.lookup(url: url, request: get(), now: t0 + 50)))
        XCTAssertEqual(again.status.fieldValue, "Airlock; hit; ttl=70", "fresh for the 304's max-age from the 304's time")
    }

    func testA304ForAnotherValidatorDoesNotFreshen() throws {
        var cache = ResponseCache()
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=10", "ETag: \"v1\""), at: t0)
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 20)))
        let other = responseHead("HTTP/1.1 304 Not Modified\r\nETag: \"v2\"")
        XCTAssertEqual(refusal(cache.complete(f, request: get(), response: other, body: [], validated: true, now: t0 + 20)),
                       .notModifiedMismatch)
        XCTAssertEqual(cache.count, 0, "the stale entry is dropped, so the next request fetches it whole")
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 21))).conditionalFields, [])
    }

    func testA200ToARevalidationReplacesTheEntry() throws {
        var cache = ResponseCache()
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=10", "ETag: \"v1\""), at: t0)
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 20)))
        let done = cache.complete(f, request: get(), response: ok("Cache-Control: max-age=60", "ETag: \"v2\""),
                                  body: Array("new!!!".utf8), validated: true, now: t0 + 20)
        XCTAssertTrue(isStored(done))
        XCTAssertEqual(done.status.fieldValue, "Airlock; fwd=stale; fwd-status=200; stored")
        XCTAssertEqual(cache.count, 1)
        XCTAssertEqual(cache.bytes, try XCTUnwrap(cache.listing(now: t0 + 20).first).bytes, "the replaced entry's bytes are not counted twice")
        XCTAssertEqual(try XCTUnwrap(hit(cache.lookup(url: url, request: get(), now: t0 + 21))).body, Array("new!!!".utf8))
    }

    func testRequestNoCacheMaxAgeZeroAndPragmaRevalidateAFreshEntry() throws {
        var cache = ResponseCache()
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=600", "ETag: \"v1\""), at: t0)
        for fields in [["Cache-Control: no-cache"], ["Cache-Control: max-age=0"], ["Pragma: no-cache"],
                       ["Cache-Control: max-age=5"], ["Cache-Control: min-fresh=595"]] {
            let request = requestHead((["GET /a HTTP/1.1", "Host: o.test"] + fields).joined(separator: "\r\n"))
            let f = try XCTUnwrap(forward(cache.lookup(url: url, request: request, now: t0 + 10)), "\(fields)")
            XCTAssertEqual(f.forward, .request, "\(fields)")
            XCTAssertEqual(f.conditionalFields, [CacheField(name: "If-None-Match", value: "\"v1\"")])
            _ = cache.abandon(f)
        }
        let reload = try XCTUnwrap(forward(cache.lookup(url: url, request: get("/a", "Cache-Control: max-age=0"), now: t0)))
        XCTAssertEqual(reload.forward, .request, "max-age=0 revalidates even a response of age 0 (a reload)")
        _ = cache.abandon(reload)
        XCTAssertNotNil(hit(cache.lookup(url: url, request: get("/a", "Cache-Control: max-age=20"), now: t0 + 10)))
        XCTAssertNotNil(hit(cache.lookup(url: url, request: get("/a", "Pragma: no-cache", "Cache-Control: max-age=20"), now: t0 + 10)),
                        "Pragma is ignored when Cache-Control is present")
    }

    func testResponseNoCacheIsStoredButAlwaysRevalidated() throws {
        var cache = ResponseCache()
        XCTAssertTrue(isStored(fill(&cache, get(), ok(date0, "Cache-Control: no-cache, max-age=600", "ETag: \"v1\""), at: t0)))
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 1)))
        XCTAssertEqual(f.forward, .stale)
        XCTAssertTrue(f.revalidates)
    }

    // MARK: the client's own conditionals (RFC 9111 4.3.2) and only-if-cached (5.2.1.7)

    func testTheClientsConditionalIsAnsweredFromTheStoredResponse() throws {
        var cache = ResponseCache()
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=60", "ETag: \"v1\"", lastModified), at: t0)
        func notModified(_ fields: String...) throws -> Bool {
            let request = requestHead((["GET /a HTTP/1.1", "Host: o.test"] + fields).joined(separator: "\r\n"))
            return try XCTUnwrap(hit(cache.lookup(url: url, request: request, now: t0 + 1))).notModified
        }
        XCTAssertTrue(try notModified("If-None-Match: \"v0\", W/\"v1\""), "weak comparison")
        XCTAssertTrue(try notModified("If-None-Match: *"))
        XCTAssertFalse(try notModified("If-None-Match: \"v2\""))
        XCTAssertFalse(try notModified("If-None-Match: \"v2\"", "If-Modified-Since: Thu, 26 Nov 2026 09:30:00 GMT"),
                       "If-None-Match decides when present")
        XCTAssertTrue(try notModified("If-Modified-Since: Thu, 26 Nov 2026 09:00:00 GMT"))
        XCTAssertFalse(try notModified("If-Modified-Since: Thu, 26 Nov 2026 08:59:59 GMT"))
        XCTAssertFalse(try notModified("If-Modified-Since: yesterday"), "an invalid date is ignored")
        XCTAssertFalse(try notModified("If-None-Match: v1"), "an invalid tag list is ignored")
        XCTAssertFalse(try notModified())

        let served = try XCTUnwrap(hit(cache.lookup(url: url, request: get(), now: t0 + 1)))
        let head = ResponseCache.notModifiedHead(served.head)
        XCTAssertEqual(head.status, 304)
        XCTAssertEqual(head.declaredFraming, .none)
        XCTAssertEqual((0..<head.headers.count).map { head.headers.name(at: $0) }, ["Date", "Cache-Control", "ETag", "Age"],
                       "no Content-Length, and no Last-Modified beside an ETag")
        XCTAssertEqual(head.headers.values(name: "age"), ["1"])
    }

    func testAStoringFillSendsTheCachesConditionalsNotTheClients() throws {
        var cache = ResponseCache()
        let client = get("/a", "If-None-Match: \"v1\"", "If-Modified-Since: Thu, 26 Nov 2026 08:00:00 GMT", "Accept: */*")
        let miss = try XCTUnwrap(forward(cache.lookup(url: url, request: client, now: t0)))
        let up = miss.upstreamHeaders(client.headers)
        XCTAssertEqual(up.values(name: "if-none-match"), [], "a 304 to the client's copy could not be stored")
        XCTAssertEqual(up.values(name: "if-modified-since"), [])
        XCTAssertEqual(up.values(name: "accept"), ["*/*"])
        let done = cache.complete(miss, request: client, response: ok(date0, "Cache-Control: max-age=10", "ETag: \"v1\""),
                                  body: [1], validated: true, now: t0)
        XCTAssertTrue(isStored(done))
        XCTAssertTrue(done.notModified, "the client's condition holds for what was stored: it gets a 304")

        let stale = try XCTUnwrap(forward(cache.lookup(url: url, request: get("/a", "If-None-Match: \"v0\""), now: t0 + 20)))
        XCTAssertEqual(stale.upstreamHeaders(get("/a", "If-None-Match: \"v0\"").headers).values(name: "if-none-match"), ["\"v1\""],
                       "the stored validator replaces the client's")
        _ = cache.abandon(stale)

        let headClient = request("HEAD", "/b", "If-None-Match: \"x\"")
        let headMiss = try XCTUnwrap(forward(cache.lookup(url: "http://o.test/b", request: headClient, now: t0)))
        XCTAssertEqual(headMiss.upstreamHeaders(headClient.headers), headClient.headers,
                       "a fill that stores nothing and validates nothing passes the request through")
    }

    /// `upstreamRequest`: nil (the client's head goes as it is, uncopied) exactly when
    /// `upstreamHeaders` would change nothing; otherwise the client's head with those headers.
    func testUpstreamRequestIsNilOnlyWhenNothingChanges() throws {
        var cache = ResponseCache()
        let plain = get("/a", "Accept: */*")
        let miss = try XCTUnwrap(forward(cache.lookup(url: url, request: plain, now: t0, joinFill: false)))
        XCTAssertNil(miss.upstreamRequest(plain), "a miss without the client's own conditional")
        let conditional = get("/a", "If-Modified-Since: Thu, 26 Nov 2026 08:00:00 GMT")
        let dropped = try XCTUnwrap(miss.upstreamRequest(conditional))
        XCTAssertEqual(dropped.headers, miss.upstreamHeaders(conditional.headers))
        XCTAssertEqual(dropped.headers.values(name: "if-modified-since"), [])
        XCTAssertEqual(dropped.target, conditional.target)
        XCTAssertEqual(dropped.method, conditional.method)
        _ = cache.complete(miss, request: plain, response: ok(date0, "Cache-Control: max-age=10", "ETag: \"v1\""),
                           body: [1], validated: true, now: t0)
        let stale = try XCTUnwrap(forward(cache.lookup(url: url, request: plain, now: t0 + 20)))
        let revalidation = try XCTUnwrap(stale.upstreamRequest(plain), "the stored validator is added")
        XCTAssertEqual(revalidation.headers.values(name: "if-none-match"), ["\"v1\""])
        XCTAssertEqual(revalidation.headers, stale.upstreamHeaders(plain.headers))
        let headClient = request("HEAD", "/b", "If-None-Match: \"x\"")
        let headMiss = try XCTUnwrap(forward(cache.lookup(url: "http://o.test/b", request: headClient, now: t0)))
        XCTAssertNil(headMiss.upstreamRequest(headClient), "a fill that stores nothing and validates nothing")
    }

    func testOnlyIfCachedIs504WithoutAFreshStoredResponse() throws {
        var cache = ResponseCache()
        let asking = get("/a", "Cache-Control: only-if-cached")
        guard case .onlyIfCached(let missing) = cache.lookup(url: url, request: asking, now: t0) else {
            return XCTFail("expected only-if-cached")
        }
        XCTAssertEqual(missing.fieldValue, "Airlock; fwd=uri-miss; detail=only-if-cached")
        XCTAssertEqual(cache.fillsInFlight, 0, "nothing goes upstream")
        fill(&cache, get(), ok(date0, "Cache-Control: max-age=10"), at: t0)
        XCTAssertNotNil(hit(cache.lookup(url: url, request: asking, now: t0 + 5)))
        guard case .onlyIfCached(let stale) = cache.lookup(url: url, request: asking, now: t0 + 20) else {
            return XCTFail("expected only-if-cached")
        }
        XCTAssertEqual(stale.fieldValue, "Airlock; fwd=stale; detail=only-if-cached")
        XCTAssertEqual(cache.fillsInFlight, 0)
    }

    // MARK: Vary (RFC 9111 4.1)

    func testVaryKeysVariantsByTheNamedRequestFields() throws {
        var cache = ResponseCache()
        let varying = ok(date0, "Cache-Control: max-age=60", "Vary: Accept-Encoding")
        fill(&cache, get("/a", "Accept-Encoding: gzip"), varying, body: Array("gz".utf8), at: t0)
        let br = get("/a", "Accept-Encoding: br")
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: br, now: t0 + 1)))
        XCTAssertEqual(f.forward, .varyMiss)
        XCTAssertTrue(isStored(cache.complete(f, request: br, response: varying, body: Array("br".utf8), validated: true, now: t0 + 1)))
        XCTAssertEqual(try XCTUnwrap(hit(cache.lookup(url: url, request: get("/a", "accept-encoding: gzip"), now: t0 + 2))).body,
                       Array("gz".utf8))
        XCTAssertEqual(try XCTUnwrap(hit(cache.lookup(url: url, request: br, now: t0 + 2))).body, Array("br".utf8))
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 2))).forward, .varyMiss,
                       "no Accept-Encoding is a variant of its own")
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.listing(now: t0 + 2).map(\.variant).sorted(), ["accept-encoding=br", "accept-encoding=gzip"])
    }

    /// A URL stored without `Vary` has one entry and no per-URL state; when a new response for
    /// it varies, the plain entry goes and the variant is stored, and when a later one does not
    /// vary, every variant goes for the plain entry: never both kinds at once.
    func testAURLThatStartsOrStopsVaryingKeepsOneKindOfEntry() throws {
        var cache = ResponseCache()
        let plain = ok(date0, "Cache-Control: max-age=60")
        let varying = ok(date0, "Cache-Control: max-age=60", "Vary: Accept-Encoding")
        let gzip = get("/a", "Accept-Encoding: gzip", "Cache-Control: no-cache")
        fill(&cache, get("/a"), plain, body: Array("plain".utf8), at: t0)
        XCTAssertEqual(cache.listing(now: t0).map(\.variant), [""])

        // no-cache forwards the stored response; the 200 that comes back varies.
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: gzip, now: t0 + 1)))
        XCTAssertTrue(isStored(cache.complete(f, request: gzip, response: varying, body: Array("gz".utf8), validated: true, now: t0 + 1)))
        XCTAssertEqual(cache.listing(now: t0 + 1).map(\.variant), ["accept-encoding=gzip"], "the plain entry went")
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get("/a"), now: t0 + 2))).forward, .varyMiss)
        let br = get("/a", "Accept-Encoding: br")
        fill(&cache, br, varying, body: Array("br".utf8), at: t0 + 2)
        XCTAssertEqual(cache.count, 2)

        // It stops varying: both variants go for the one plain entry, which every request hits.
        let again = try XCTUnwrap(forward(cache.lookup(url: url, request: get("/a", "Accept-Encoding: br", "Cache-Control: no-cache"),
                                                       now: t0 + 3)))
        XCTAssertTrue(isStored(cache.complete(again, request: br, response: plain, body: Array("plain2".utf8), validated: true,
                                              now: t0 + 3)))
        XCTAssertEqual(cache.listing(now: t0 + 3).map(\.variant), [""])
        XCTAssertEqual(try XCTUnwrap(hit(cache.lookup(url: url, request: get("/a", "Accept-Encoding: gzip"), now: t0 + 4))).body,
                       Array("plain2".utf8))
        XCTAssertEqual(cache.remove(url: url), 1)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: br, now: t0 + 5))).forward, .uriMiss)
    }

    /// The store's own field check is skipped only when the caller's response filter made it:
    /// without `fieldsChecked` a `Set-Cookie` response is refused at the store as before.
    func testTheStoreChecksTheFieldRulesUnlessTheFilterDid() throws {
        var cache = ResponseCache()
        let cookie = ok(date0, "Cache-Control: max-age=60", "Set-Cookie: s=1")
        XCTAssertEqual(refusal(fill(&cache, get("/a"), cookie, at: t0)), .setCookie)
        let fresh = ok(date0, "Cache-Control: max-age=60")
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get("/a"), now: t0, joinFill: false)))
        XCTAssertTrue(isStored(cache.complete(f, request: get("/a"), response: fresh, body: [1], validated: true, now: t0,
                                              fieldsChecked: true)))
        let g = try XCTUnwrap(forward(cache.lookup(url: "http://o.test/b", request: get("/b"), now: t0)))
        XCTAssertEqual(refusal(cache.complete(g, request: get("/b"), response: ok(date0, "Cache-Control: max-age=0"), body: [1],
                                              validated: true, now: t0, fieldsChecked: true)), .noFreshness,
                       "the freshness rules still apply")
    }

    // MARK: invalidation (RFC 9111 4.4)
    /// Every variant of a URL goes with it (an invalidation, `DELETE /cache?url=`), and a URL
    /// whose last variant went is a `uri-miss` again, not a `vary-miss`.
    func testVariantsGoWithTheirURL() throws {
        var cache = ResponseCache(limits: .init(memory: 100_000, purgeTo: 1, maxObject: 100_000))
        let varying = ok(date0, "Cache-Control: max-age=60", "Vary: Accept-Encoding")
        let gzip = get("/a", "Accept-Encoding: gzip"), br = get("/a", "Accept-Encoding: br")
        fill(&cache, gzip, varying, at: t0)
        fill(&cache, br, varying, at: t0)
        XCTAssertEqual(cache.invalidate(method: .put, url: url, response: responseHead("HTTP/1.1 204 No Content")), 2)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: gzip, now: t0, joinFill: false))).forward, .uriMiss)

        var other = ResponseCache()
        fill(&other, gzip, varying, at: t0)
        fill(&other, br, varying, at: t0)
        XCTAssertEqual(other.remove(url: url), 2)
        XCTAssertEqual(try XCTUnwrap(forward(other.lookup(url: url, request: br, now: t0, joinFill: false))).forward, .uriMiss)

        // Purged one by one for memory: the URL is forgotten with its last variant.
        fill(&cache, gzip, varying, at: t0)
        fill(&cache, get("/b"), ok(date0, "Cache-Control: max-age=60"), body: [UInt8](repeating: 0, count: 99_000), at: t0)
        XCTAssertEqual(cache.listing(now: t0).map(\.url), [], "both purged to purge_to 1")
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: gzip, now: t0))).forward, .uriMiss)
    }


    func testUnsafeMethodsInvalidateTheURLAndSameOriginLocations() {
        var cache = ResponseCache()
        let fresh = ok(date0, "Cache-Control: max-age=600")
        for path in ["/a", "/b", "/c", "/d"] { fill(&cache, get(path), fresh, at: t0) }
        fill(&cache, requestHead("GET /c HTTP/1.1\r\nHost: other.test"), fresh, at: t0)
        XCTAssertEqual(cache.count, 5)

        XCTAssertEqual(cache.invalidate(method: .get, url: url, response: fresh), 0, "safe methods invalidate nothing")
        XCTAssertEqual(cache.invalidate(method: .post, url: url, response: responseHead("HTTP/1.1 500 Oops")), 0,
                       "an error response invalidates nothing")
        let created = responseHead("HTTP/1.1 201 Created\r\nLocation: /b\r\nContent-Location: http://other.test/c")
        XCTAssertEqual(cache.invalidate(method: .post, url: url, response: created), 2, "/a and /b; other.test's /c is another origin")
        XCTAssertEqual(cache.listing(now: t0).map(\.url).sorted(), ["http://o.test/c", "http://o.test/d", "http://other.test/c"])
        let moved = responseHead("HTTP/1.1 204 No Content\r\nContent-Location: HTTP://O.TEST:80/c")
        XCTAssertEqual(cache.invalidate(method: .delete, url: "http://o.test/zzz", response: moved), 1, "same origin, spelt otherwise")
        XCTAssertEqual(cache.invalidate(method: .other("PURGE"), url: "http://o.test/d", response: fresh), 1,
                       "an unknown method is unsafe")
        XCTAssertEqual(cache.listing(now: t0).map(\.url), ["http://other.test/c"])
        XCTAssertEqual(cache.counters.invalidations, 4)
    }

    // MARK: memory (AFAutoPurgingImageCache)

    func testPastMemoryTheLeastRecentlyUsedArePurgedToPurgeTo() throws {
        let fresh = ok(date0, "Cache-Control: max-age=600")
        let body = [UInt8](repeating: 7, count: 200)
        var probe = ResponseCache()
        fill(&probe, get("/0"), fresh, body: body, at: t0)
        let each = try XCTUnwrap(probe.listing(now: t0).first).bytes   // what one entry counts
        // Three entries fit in memory, a fourth passes it; a purge must drop two to reach purge_to.
        var cache = ResponseCache(limits: .init(memory: 3 * each + each / 2, purgeTo: 2 * each - 1, maxObject: each))
        for path in ["/1", "/2", "/3"] { XCTAssertTrue(isStored(fill(&cache, get(path), fresh, body: body, at: t0))) }
        XCTAssertEqual(cache.bytes, 3 * each)
        XCTAssertEqual(cache.counters.evictions, 0)
        XCTAssertNotNil(hit(cache.lookup(url: "http://o.test/1", request: get("/1"), now: t0)))   // /1 is now the most recent
        fill(&cache, get("/4"), fresh, body: body, at: t0)
        XCTAssertEqual(cache.listing(now: t0).map(\.url), ["http://o.test/4"],
                       "/2, /3 then /1 purged (least recently used first) until at most purge_to")
        XCTAssertEqual(cache.bytes, each)
        XCTAssertEqual(cache.counters.evictions, 3)

        var roomier = ResponseCache(limits: .init(memory: 3 * each + each / 2, purgeTo: 2 * each, maxObject: each))
        for path in ["/1", "/2", "/3"] { fill(&roomier, get(path), fresh, body: body, at: t0) }
        _ = roomier.lookup(url: "http://o.test/1", request: get("/1"), now: t0)
        fill(&roomier, get("/4"), fresh, body: body, at: t0)
        XCTAssertEqual(roomier.listing(now: t0).map(\.url), ["http://o.test/4", "http://o.test/1"], "/2 then /3 go, /1 stays")
        XCTAssertEqual(roomier.counters.evictions, 2)
    }

    /// With a purge slice, the store that passes `memory` drops only what brings the cache back
    /// within it; each `purgeStep` then drops at most a slice more, least recently used first,
    /// until `purgeTo`. The end is the same as the whole purge at once, entry for entry.
    func testAPurgeInSlicesEndsWhereTheWholePurgeDoes() throws {
        let fresh = ok(date0, "Cache-Control: max-age=600")
        let body = [UInt8](repeating: 7, count: 200)
        var probe = ResponseCache()
        fill(&probe, get("/0"), fresh, body: body, at: t0)
        let each = try XCTUnwrap(probe.listing(now: t0).first).bytes
        let limits = ResponseCache.Limits(memory: 20 * each + each / 2, purgeTo: 5 * each + 10, maxObject: 2 * each)
        var whole = ResponseCache(limits: limits)
        var sliced = ResponseCache(limits: limits)
        sliced.purgeSlice = 4
        for n in 0..<20 {
            fill(&whole, get("/\(n)"), fresh, body: body, at: t0)
            fill(&sliced, get("/\(n)"), fresh, body: body, at: t0)
        }
        for n in [3, 0, 7] {   // used again: the most recent now
            _ = whole.lookup(url: "http://o.test/\(n)", request: get("/\(n)"), now: t0)
            _ = sliced.lookup(url: "http://o.test/\(n)", request: get("/\(n)"), now: t0)
        }
        XCTAssertFalse(sliced.purging)
        fill(&whole, get("/20"), fresh, body: body, at: t0)
        fill(&sliced, get("/20"), fresh, body: body, at: t0)
        XCTAssertEqual(whole.count, 5)
        XCTAssertFalse(whole.purging)
        XCTAssertEqual(sliced.count, 20, "only the one entry that passed memory went")
        XCTAssertTrue(sliced.purging)
        var steps = 0
        while sliced.purging {
            let before = sliced.count
            let more = sliced.purgeStep()
            steps += 1
            XCTAssertEqual(more, sliced.purging)
            XCTAssertLessThanOrEqual(before - sliced.count, 4, "at most a slice per step")
            XCTAssertLessThanOrEqual(sliced.bytes, limits.memory)
            XCTAssertLessThan(steps, 10, "the purge ends")
            if steps >= 10 { break }
        }
        XCTAssertEqual(steps, 4, "15 entries in slices of 4")
        XCTAssertEqual(sliced.listing(now: t0).map(\.url), whole.listing(now: t0).map(\.url))
        XCTAssertEqual(sliced.listing(now: t0).map(\.url), ["/20", "/7", "/0", "/3", "/19"].map { "http://o.test" + $0 })
        XCTAssertEqual(sliced.counters.evictions, whole.counters.evictions)
        XCTAssertFalse(sliced.purgeStep(), "nothing to do once purge_to is reached")
        XCTAssertEqual(sliced.count, 5)

        // A purge under way that removals finish (here DELETE /cache) ends without dropping more.
        for n in 21..<37 { fill(&sliced, get("/\(n)"), fresh, body: body, at: t0) }
        XCTAssertTrue(sliced.purging)
        let evictions = sliced.counters.evictions
        XCTAssertEqual(sliced.remove(url: nil), 20)
        XCTAssertFalse(sliced.purging)
        // Emptied at once, freed in slices: nothing found, nothing counted, 20 left to free.
        XCTAssertEqual(sliced.count, 0)
        XCTAssertEqual(sliced.bytes, 0)
        XCTAssertEqual(sliced.retiredCount, 20)
        XCTAssertTrue(sliced.hasWork)
        XCTAssertNotNil(forward(sliced.lookup(url: "http://o.test/30", request: get("/30"), now: t0)), "a miss at once")
        var frees = 0
        while sliced.hasWork && frees < 10 {
            let before = sliced.retiredCount
            sliced.purgeStep()
            XCTAssertLessThanOrEqual(before - sliced.retiredCount, 4, "at most a slice per step")
            frees += 1
        }
        XCTAssertEqual(frees, 5, "20 entries in slices of 4")
        XCTAssertEqual(sliced.retiredCount, 0)
        XCTAssertFalse(sliced.purgeStep())
        XCTAssertEqual(sliced.listing(now: t0).count, 0)
        XCTAssertEqual(sliced.counters.evictions, evictions, "removed entries are not evictions")

        // Without a slice the entries go at once.
        XCTAssertEqual(whole.remove(url: nil), 5)
        XCTAssertEqual(whole.retiredCount, 0)
        XCTAssertFalse(whole.hasWork)
    }

    /// A response whose own `Content-Length` gave the body's length is stored as it came
    /// (`storedHead` leaves its fields alone): a served head has no hop-by-hop fields and no
    /// received `Age` all the same (`served` drops them), the other fields in order, the length once.
    func testAStoredHeadMadeInPlaceDropsTheSameFields() throws {
        var cache = ResponseCache()
        let upstream = ok(date0, "Connection: keep-alive", "Content-Length: 5", "Keep-Alive: timeout=5", "Age: 7",
                          "Proxy-Connection: keep-alive", "X-Kept: yes", "Cache-Control: max-age=60", "Trailer: X-T", "X-Last: 1")
        XCTAssertEqual(upstream.declaredFraming, .length(5))
        XCTAssertTrue(isStored(fill(&cache, get(), upstream, body: Array("hello".utf8), at: t0)))
        let served = try XCTUnwrap(hit(cache.lookup(url: url, request: get(), now: t0 + 10)))
        let names = (0..<served.head.headers.count).map { served.head.headers.name(at: $0) }
        XCTAssertEqual(names, ["Date", "Content-Length", "X-Kept", "Cache-Control", "X-Last", "Age"])
        XCTAssertEqual(served.head.headers.values(.contentLength), ["5"])
        XCTAssertEqual(served.head.headers.values(name: "age"), ["17"], "the stored Age (7) counted once, written afresh")
        XCTAssertEqual(served.head.headers.values(name: "x-last"), ["1"])
        XCTAssertFalse(served.head.headers.contains(.connection))
        XCTAssertFalse(served.head.headers.contains(.keepAlive))
        XCTAssertFalse(served.head.headers.contains(.proxyConnection))
        XCTAssertFalse(served.head.headers.contains(.trailer))
        XCTAssertEqual(served.head.declaredFraming, .length(5))
    }

    /// The stored head has one `Content-Length`, the body's (whatever the response said, or
    /// did not say, of its length); a 204 has none.
    func testTheStoredHeadCarriesTheBodysLengthOnce() throws {
        let cases: [(fields: [String], body: Int)] = [
            (["Content-Length: 5", "X-After: 1"], 5),
            (["Content-Length: 05", "X-After: 1"], 5),
            (["Content-Length: 5", "Content-Length: 5", "X-After: 1"], 5),
            (["Content-Length: 5, 5", "X-After: 1"], 5),
            (["Transfer-Encoding: chunked", "X-After: 1"], 5),
            (["Content-Length: 0", "X-After: 1"], 0),
            (["Content-Length: 12345678901", "X-After: 1"], 5),   // the body is what counts
        ]
        for (n, c) in cases.enumerated() {
            var cache = ResponseCache()
            let response = ok(([date0, "Cache-Control: max-age=60"] + c.fields).joined(separator: "\r\n"))
            XCTAssertTrue(isStored(fill(&cache, get("/\(n)"), response, body: [UInt8](repeating: 1, count: c.body), at: t0)), "\(c.fields)")
            let served = try XCTUnwrap(hit(cache.lookup(url: "http://o.test/\(n)", request: get("/\(n)"), now: t0)))
            XCTAssertEqual(served.head.headers.values(.contentLength), [String(c.body)], "\(c.fields)")
            XCTAssertEqual(served.head.headers.values(name: "x-after"), ["1"], "\(c.fields)")
            XCTAssertEqual(served.head.headers.values(.transferEncoding), [], "\(c.fields)")
            XCTAssertEqual(served.head.declaredFraming, .length(UInt64(c.body)))
        }
        var cache = ResponseCache()
        let noContent = responseHead("HTTP/1.1 204 No Content\r\n\(date0)\r\nCache-Control: max-age=60")
        XCTAssertTrue(isStored(fill(&cache, get("/204"), noContent, body: [], at: t0)))
        let served = try XCTUnwrap(hit(cache.lookup(url: "http://o.test/204", request: get("/204"), now: t0)))
        XCTAssertEqual(served.head.headers.values(.contentLength), [])
    }

    /// An entry counts more than its text: the key, the tables' slots and the allocator's
    /// headers (`entryOverhead`), so many tiny responses cannot hold many times `memory`.
    func testAnEntryCountsItsOverheadBesidesItsText() throws {
        var cache = ResponseCache()
        fill(&cache, get("/a"), ok("Cache-Control: max-age=60"), body: [], at: t0)
        let row = try XCTUnwrap(cache.listing(now: t0).first)
        XCTAssertGreaterThanOrEqual(row.bytes, 500 + "http://o.test/a".utf8.count + "Cache-Control: max-age=60".utf8.count,
                                    "a tiny entry held ~1 KiB resident when measured; at least half of that is counted")
    }

    func testMemoryStaysBoundedWhileTenTimesItIsRequested() {
        let limits = ResponseCache.Limits(memory: 64 << 10, purgeTo: 40 << 10, maxObject: 8 << 10)
        var cache = ResponseCache(limits: limits)
        let fresh = ok(date0, "Cache-Control: max-age=600")
        var requested = 0
        var i = 0
        while requested < 10 * limits.memory {
            let body = [UInt8](repeating: UInt8(i & 0xFF), count: 1_000 + (i * 37) % 6_000)
            requested += body.count
            fill(&cache, get("/o\(i)"), fresh, body: body, at: t0)
            XCTAssertLessThanOrEqual(cache.bytes, limits.memory)
            XCTAssertEqual(cache.bytes, cache.listing(now: t0).map(\.bytes).reduce(0, +), "the count matches the entries")
            i += 1
        }
        XCTAssertGreaterThan(cache.counters.evictions, 0)
        XCTAssertEqual(cache.counters.stores, i)
    }

    // MARK: request collapsing

    func testConcurrentMissesMakeOneUpstreamRequestAndWaitersHitAfterTheStore() throws {
        var cache = ResponseCache()
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0)))
        XCTAssertTrue(f.collapses)
        for _ in 0..<3 {
            guard case .wait(let key) = cache.lookup(url: url, request: get(), now: t0) else { return XCTFail("expected wait") }
            XCTAssertEqual(key, f.key)
        }
        XCTAssertEqual(cache.counters.collapsed, 3)
        XCTAssertNotNil(forward(cache.lookup(url: "http://o.test/other", request: get("/other"), now: t0)), "another key is not held")
        let done = cache.complete(f, request: get(), response: ok(date0, "Cache-Control: max-age=60"), body: [1], validated: true, now: t0)
        XCTAssertEqual(done.waiters, 3)
        XCTAssertNotNil(hit(cache.lookup(url: url, request: get(), now: t0)))
    }

    func testAnUnstorableOrFailedFillReleasesTheWaitersToGoUpstreamThemselves() throws {
        var cache = ResponseCache()
        let f = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0)))
        _ = cache.lookup(url: url, request: get(), now: t0)
        _ = cache.lookup(url: url, request: get(), now: t0)
        let done = cache.complete(f, request: get(), response: ok(date0, "Cache-Control: max-age=60", "Set-Cookie: a=1"),
                                  body: [1], validated: true, now: t0)
        XCTAssertEqual(refusal(done), .setCookie)
        XCTAssertEqual(done.waiters, 2)
        XCTAssertEqual(done.status.fieldValue, "Airlock; fwd=uri-miss; fwd-status=200; detail=set-cookie")
        XCTAssertEqual(cache.fillsInFlight, 0)
        // The released waiters go upstream, each on its own: neither becomes a fill the other waits on.
        let w1 = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0, joinFill: false)))
        let w2 = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0, joinFill: false)))
        XCTAssertFalse(w1.collapses || w2.collapses)
        XCTAssertEqual(cache.fillsInFlight, 0)

        let g = try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0)))
        XCTAssertNotNil(forward(cache.lookup(url: url, request: get(), now: t0, joinFill: false)),
                        "a released waiter does not wait on a newer fill either")
        _ = cache.lookup(url: url, request: get(), now: t0)
        XCTAssertEqual(cache.abandon(g), 1, "an upstream failure releases the waiter")
        XCTAssertEqual(cache.fillsInFlight, 0)
        XCTAssertNotNil(forward(cache.lookup(url: url, request: get(), now: t0)), "and the next miss is a fill again")
    }

    /// 20,000 seeded random operations (lookups of 40 URLs in three variants, GET and HEAD,
    /// answers of every kind, aborted fills, invalidations, removals, time passing): after each,
    /// the stored bytes equal the entries' sum and stay within `memory`, no entry passes
    /// `max_object`, and every fill's waiters are released exactly once.
    func testInvariantsHoldOverRandomOperations() { invariantsHoldOverRandomOperations(purgeSlice: .max) }

    /// The same with purges in slices of two entries, stepped between the operations (as the
    /// executor steps them on later loop turns).
    func testInvariantsHoldOverRandomOperationsWithPurgesInSlices() { invariantsHoldOverRandomOperations(purgeSlice: 2) }

    private func invariantsHoldOverRandomOperations(purgeSlice: Int) {
        let limits = ResponseCache.Limits(memory: 40_000, purgeTo: 25_000, maxObject: 6_000)
        var cache = ResponseCache(limits: limits)
        cache.purgeSlice = purgeSlice
        var purgeSteps = 0
        var state: UInt64 = 9111
        func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
        var now = t0
        var pending: [(ResponseCache.Fill, RequestHead)] = []
        var waiting: [CacheKey: Int] = [:]
        var released = 0, waited = 0
        for step in 0..<20_000 {
            switch next(10) {
            case 0...3:
                var fields = ["\(next(2) == 0 ? "GET" : "HEAD") /u\(next(40)) HTTP/1.1", "Host: o.test"]
                if next(3) > 0 { fields.append("Accept-Encoding: \(["gzip", "br"][next(2)])") }
                if next(10) == 0 { fields.append("Cache-Control: no-cache") }
                let request = requestHead(fields.joined(separator: "\r\n"))
                switch cache.lookup(url: CacheKey.url(scheme: .http, request: request)!, request: request, now: now) {
                case .forward(let fill): pending.append((fill, request))
                case .wait(let key):
                    waiting[key, default: 0] += 1
                    waited += 1
                case .hit(let hit): XCTAssertEqual(hit.head.headers.first(.contentLength), String(hit.body.count))
                case .bypass, .onlyIfCached: XCTFail("no Range, no only-if-cached here")
                }
            case 4...7 where !pending.isEmpty:
                let (fill, request) = pending.remove(at: next(pending.count))
                var lines = [next(6) == 0 ? "HTTP/1.1 304 Not Modified" : "HTTP/1.1 200 OK"]   // no Date: received now
                lines.append(["Cache-Control: max-age=\(next(120))", "Cache-Control: no-store", "Expires: 0", "ETag: \"e\(next(3))\""][next(4)])
                if next(2) == 0 { lines.append("Vary: Accept-Encoding") }
                if next(12) == 0 { lines.append("Set-Cookie: s=1") }
                let body = [UInt8](repeating: 1, count: next(7_000))
                let done = cache.complete(fill, request: request, response: responseHead(lines.joined(separator: "\r\n")),
                                          body: body, validated: next(8) > 0, now: now)
                XCTAssertEqual(done.waiters, fill.collapses ? waiting.removeValue(forKey: fill.key) ?? 0 : 0, "step \(step)")
                released += done.waiters
            case 8 where !pending.isEmpty:
                let (fill, _) = pending.remove(at: next(pending.count))
                let n = cache.abandon(fill)
                XCTAssertEqual(n, fill.collapses ? waiting.removeValue(forKey: fill.key) ?? 0 : 0, "step \(step)")
                released += n
            case 8:
                cache.invalidate(method: .post, url: "http://o.test/u\(next(40))", response: responseHead("HTTP/1.1 204 No Content"))
            default:
                if next(50) == 0 { cache.remove(url: next(2) == 0 ? nil : "http://o.test/u\(next(40))") }
                if cache.hasWork, next(2) == 0 {
                    let before = cache.count + cache.retiredCount
                    cache.purgeStep()
                    purgeSteps += 1
                    XCTAssertLessThanOrEqual(before - cache.count - cache.retiredCount, purgeSlice, "step \(step)")
                }
                now += Int64(next(5))
            }
            let rows = cache.listing(now: now)
            XCTAssertEqual(cache.bytes, rows.map(\.bytes).reduce(0, +), "step \(step)")
            XCTAssertLessThanOrEqual(cache.bytes, limits.memory, "step \(step)")
            XCTAssertEqual(cache.count, rows.count)
            XCTAssertTrue(rows.allSatisfy { $0.bytes <= limits.maxObject }, "step \(step)")
            XCTAssertEqual(cache.fillsInFlight, pending.filter(\.0.collapses).count, "step \(step)")
        }
        for (fill, _) in pending { released += cache.abandon(fill) }
        XCTAssertEqual(cache.fillsInFlight, 0)
        XCTAssertEqual(released, waited, "every waiter released exactly once")
        XCTAssertGreaterThan(cache.counters.hits, 100)
        XCTAssertGreaterThan(cache.counters.evictions, 10)
        XCTAssertEqual(purgeSteps > 10, purgeSlice != .max, "a sliced purge was stepped, a whole one never under way")
        XCTAssertGreaterThan(cache.counters.refreshed, 10)
        XCTAssertGreaterThan(waited, 100)
    }

    // MARK: Cache-Status (RFC 9211)

    func testCacheStatusFieldValues() {
        XCTAssertEqual(CacheStatus(hit: true, ttl: 12).fieldValue, "Airlock; hit; ttl=12")
        XCTAssertEqual(CacheStatus(fwd: .uriMiss, fwdStatus: 200, stored: true).fieldValue, "Airlock; fwd=uri-miss; fwd-status=200; stored")
        XCTAssertEqual(CacheStatus(fwd: .stale, fwdStatus: 304).fieldValue, "Airlock; fwd=stale; fwd-status=304")
        XCTAssertEqual(CacheStatus(fwd: .varyMiss, collapsed: true).fieldValue, "Airlock; fwd=vary-miss; collapsed")
        XCTAssertEqual(CacheStatus(fwd: .request, fwdStatus: 200, detail: .refused(.noStore)).fieldValue,
                       "Airlock; fwd=request; fwd-status=200; detail=no-store")
        XCTAssertEqual(CacheStatus(hit: true, ttl: -3).fieldValue, "Airlock; hit; ttl=-3")
        XCTAssertEqual(CacheStatus(hit: true, ttl: 0).fieldValue, "Airlock; hit; ttl=0")
        XCTAssertEqual(CacheStatus(hit: true, ttl: .max).fieldValue, "Airlock; hit; ttl=\(Int64.max)")
        XCTAssertEqual(CacheStatus(hit: true, ttl: 1_000).fieldValue, "Airlock; hit; ttl=1000")
        // Written into a head as a field line of its own, after what is there.
        var w = HeadWriter()
        w.field("Age", decimal: 1)
        CacheStatus(fwd: .uriMiss, fwdStatus: 200).write(into: &w)
        CacheStatus(hit: true, ttl: 1_000_000).write(into: &w)
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self),
                       "Age: 1\r\nCache-Status: Airlock; fwd=uri-miss; fwd-status=200\r\nCache-Status: Airlock; hit; ttl=1000000\r\n")
    }

    /// Every `fwd` value, and every part at once at its widest (the member is written into a
    /// buffer sized for it: `fieldValue` and `write(into:)` give the same text).
    func testCacheStatusEveryPartAtItsWidest() {
        for fwd in CacheStatus.Forward.allCases {
            XCTAssertEqual(CacheStatus(fwd: fwd).fieldValue, "Airlock; fwd=" + fwd.rawValue)
            // A forward answered 200 (a miss's) is written from a field made once: the same text.
            var w = HeadWriter(capacity: 64)
            CacheStatus(fwd: fwd, fwdStatus: 200).write(into: &w)
            CacheStatus(fwd: fwd, fwdStatus: 201).write(into: &w)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self),
                           "Cache-Status: Airlock; fwd=\(fwd.rawValue); fwd-status=200\r\nCache-Status: Airlock; fwd=\(fwd.rawValue); fwd-status=201\r\n")
        }
        let details: [CacheStatus.Detail] = CacheRefusal.allCases.map { .refused($0) } + [.onlyIfCached]
        XCTAssertEqual(details.map(\.text), CacheRefusal.allCases.map(\.rawValue) + ["only-if-cached"])
        for detail in details {
            let widest = CacheStatus(hit: true, fwd: .varyMiss, fwdStatus: .min, ttl: .min, stored: true, collapsed: true, detail: detail)
            let expected = "Airlock; hit; fwd=vary-miss; fwd-status=\(Int.min); ttl=\(Int64.min); stored; collapsed; detail=" + detail.text
            XCTAssertEqual(widest.fieldValue, expected)
            var w = HeadWriter(capacity: 64)   // grown to the field's room
            widest.write(into: &w)
            CacheStatus(fwd: .miss, fwdStatus: 9, ttl: 10).write(into: &w)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self),
                           "Cache-Status: " + expected + "\r\nCache-Status: Airlock; fwd=miss; fwd-status=9; ttl=10\r\n")
        }
    }

    /// The switch the store asks agrees with the published set on every status.
    func testHeuristicallyCacheableSwitchAgreesWithTheSet() {
        for status in 0...1000 {
            XCTAssertEqual(ResponseCache.isHeuristicallyCacheable(status), ResponseCache.heuristicallyCacheable.contains(status), "\(status)")
        }
    }

    /// Equal keys hash alike, and keys that differ in the URL, the variant, or only in where
    /// one ends and the other starts, hash apart.
    func testCacheKeysHashByURLAndVariant() {
        var hashes: Set<Int> = []
        var keys: Set<CacheKey> = []
        for u in 0..<50 {
            for v in ["", "accept-encoding=gzip", "accept-encoding=br", "accept-encoding\u{1}", "a\u{0}b=c"] {
                let key = CacheKey(url: "http://o.test/\(u)", variant: v)
                XCTAssertEqual(key, CacheKey(url: "http://o.test/\(u)", variant: v))
                XCTAssertEqual(key.hashValue, CacheKey(url: "http://o.test/\(u)", variant: v).hashValue)
                hashes.insert(key.hashValue)
                keys.insert(key)
            }
        }
        XCTAssertEqual(hashes.count, 250)
        XCTAssertEqual(keys.count, 250)
        XCTAssertNotEqual(CacheKey(url: "http://o.test/ab", variant: "c").hashValue, CacheKey(url: "http://o.test/a", variant: "bc").hashValue)
        XCTAssertNotEqual(CacheKey(url: "http://o.test/ab", variant: "c"), CacheKey(url: "http://o.test/a", variant: "bc"))
    }

    /// A table probes with the key's stored hash mixed with the table's seed: equal keys agree
    /// under one seed, and a seed one bit apart changes about half the bits for every key (so
    /// two tables' bucket orders are unrelated, as with `Hasher`; a plain `hash ^ seed` would
    /// flip one bit and keep them in step).
    func testCacheKeyRawHashMixesTheTableSeedIntoEveryBit() {
        var flipped = 0, seen: Set<Int> = []
        for n in 0..<2_000 {
            let key = CacheKey(url: "http://o.test/?n=\(n)")
            XCTAssertEqual(key._rawHashValue(seed: 7), CacheKey(url: "http://o.test/?n=\(n)")._rawHashValue(seed: 7))
            seen.insert(key._rawHashValue(seed: 7))
            for bit in 0..<64 {
                let a = key._rawHashValue(seed: 0x5EED), b = key._rawHashValue(seed: 0x5EED ^ (1 << bit))
                let changed = (a ^ b).nonzeroBitCount
                XCTAssertTrue((8...56).contains(changed), "seed bit \(bit) changed \(changed) bits of \(n)'s probe")
                flipped += changed
            }
        }
        XCTAssertEqual(seen.count, 2_000)
        XCTAssertEqual(Double(flipped) / Double(2_000 * 64), 32, accuracy: 1)
    }

    /// The URL key is written into a String sized beforehand: every port width, default ports left out.
    func testURLKeyAtEveryPortWidth() {
        for port: UInt16 in [1, 9, 10, 99, 100, 999, 1000, 8080, 9999, 10000, 65535] {
            XCTAssertEqual(CacheKey.url(scheme: .http, request: requestHead("GET /p?q=1 HTTP/1.1\r\nHost: H.test:\(port)")),
                           "http://h.test:\(port)/p?q=1")
        }
        XCTAssertEqual(CacheKey.url(scheme: .http, request: requestHead("GET / HTTP/1.1\r\nHost: h.test:443")), "http://h.test:443/")
        XCTAssertEqual(CacheKey.url(scheme: .https, request: requestHead("GET / HTTP/1.1\r\nHost: h.test:443")), "https://h.test/")
        XCTAssertEqual(CacheKey.url(scheme: .https, request: requestHead("GET http://[::1]:80/x HTTP/1.1\r\nHost: y")), "http://[::1]/x")
    }

    // MARK: admin

    func testListingAndRemoval() throws {
        var cache = ResponseCache()
        let fresh = ok(date0, "Cache-Control: max-age=60")
        fill(&cache, get("/a"), fresh, at: t0)
        fill(&cache, get("/b"), fresh, body: Array("bb".utf8), at: t0)
        _ = cache.lookup(url: url, request: get(), now: t0 + 5)
        _ = cache.lookup(url: url, request: get(), now: t0 + 5)
        let rows = cache.listing(now: t0 + 5)
        XCTAssertEqual(rows.map(\.url), ["http://o.test/a", "http://o.test/b"], "most recently used first")
        XCTAssertEqual(rows.map(\.hits), [2, 0])
        XCTAssertEqual(rows.map(\.age), [5, 5])
        XCTAssertEqual(rows.map(\.fresh), [true, true])
        XCTAssertEqual(rows.map(\.status), [200, 200])
        XCTAssertEqual(rows[0].bytes - rows[1].bytes, 3, "bytes count the body")
        XCTAssertEqual(cache.bytes, rows[0].bytes + rows[1].bytes)
        // A limit lists that many, the most recently used first.
        XCTAssertEqual(cache.listing(now: t0 + 5, limit: 1).map(\.url), ["http://o.test/a"])
        XCTAssertEqual(cache.listing(now: t0 + 5, limit: 0).count, 0)
        XCTAssertEqual(cache.listing(now: t0 + 5, limit: 3).map(\.url), rows.map(\.url))
        XCTAssertEqual(cache.remove(url: "http://o.test/b"), 1)
        XCTAssertEqual(cache.remove(url: "http://o.test/nothing"), 0)
        XCTAssertEqual(cache.bytes, rows[0].bytes)
        fill(&cache, get("/c"), fresh, at: t0)
        XCTAssertEqual(cache.remove(url: nil), 2)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.bytes, 0)
        XCTAssertEqual(try XCTUnwrap(forward(cache.lookup(url: url, request: get(), now: t0 + 6))).forward, .uriMiss)
    }
}
