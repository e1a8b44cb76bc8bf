import AirlockTesting
import Foundation
import XCTest

/// `routes[].cache.heuristic` (RFC 9111 4.2.2) in front of a real origin that sends what a static
/// file server sends: `Date` and `Last-Modified`, no `Cache-Control` or `Expires`. With the
/// heuristic a repeated GET is served from memory for that percentage of `Date − Last-Modified`;
/// without it, every repeat is revalidated upstream.
final class CacheHeuristicTests: XCTestCase {
    private var origin: TestOrigin?
    private var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    /// IMF-fixdate (RFC 9110 5.6.7) of `date`.
    private static func httpDate(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: date)
    }

    /// Ten days between `Last-Modified` and `Date`: 10 % of that is one day (86,400 s).
    private static let lastModified = httpDate(Date(timeIntervalSinceNow: -10 * 86_400))

    /// An origin answering `/file` with `Date` (now) and `Last-Modified` only, and a 304 to a
    /// matching `If-Modified-Since`; Airlock (one worker) with `cache` on its route.
    private func start(cache: String) throws -> (TestOrigin, AirlockProcess) {
        let lm = Self.lastModified
        let o = try TestOrigin(.respond { r in
            let fields = [("Date", Self.httpDate(Date())), ("Last-Modified", lm)]
            if r.header("If-Modified-Since") == lm { return .status(304, "Not Modified", headers: fields) }
            return TestResponse(headers: fields + [("Content-Type", "text/plain")], body: .bytes(Array("static file".utf8)))
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1) + "\n    cache: \(cache)\n")
        airlock = a
        return (o, a)
    }

    private func get(_ a: AirlockProcess) throws -> RawResponse {
        let c = try RawClient(port: a.port)
        defer { c.close() }
        return try c.exchange("GET /file HTTP/1.1\r\nHost: cache.test\r\n\r\n")
    }

    func testWithTheHeuristicTheSecondGetIsAHitForAPercentageOfTheFilesAge() throws {
        let (o, a) = try start(cache: "{ heuristic: 10% }")
        let first = try get(a)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.header("Cache-Status"), "Airlock; fwd=uri-miss; fwd-status=200")
        let second = try get(a)
        XCTAssertEqual(second.status, 200)
        XCTAssertEqual(String(decoding: second.body, as: UTF8.self), "static file")
        let status = try XCTUnwrap(second.header("Cache-Status"))
        XCTAssertTrue(status.hasPrefix("Airlock; hit; ttl="), status)
        // ttl = 86,400 − the entry's age (whole seconds; Date has a one-second grain).
        let ttl = try XCTUnwrap(Int(status.dropFirst("Airlock; hit; ttl=".count)), status)
        XCTAssertTrue((86_390...86_400).contains(ttl), "ttl \(ttl): 10 % of ten days, less the entry's age")
        XCTAssertEqual(o.requests.count, 1, "the repeat was served from memory")
    }

    func testWithoutTheHeuristicEverySecondGetIsRevalidated() throws {
        let (o, a) = try start(cache: "{}")
        XCTAssertEqual(try get(a).status, 200)
        for _ in 0..<2 {
            let again = try get(a)
            XCTAssertEqual(again.status, 200)
            XCTAssertEqual(String(decoding: again.body, as: UTF8.self), "static file")
            XCTAssertEqual(again.header("Cache-Status"), "Airlock; fwd=stale; fwd-status=304")
        }
        XCTAssertEqual(o.requests.count, 3, "each repeat went upstream")
        XCTAssertEqual(o.requests.last?.header("If-Modified-Since"), Self.lastModified)
    }
}
