import AirlockTesting
import Foundation
import XCTest

/// The fields the cache reads are recognised in any case at parse time (`KnownField`): through
/// the real gateway and curl, an origin's odd-case `Cache-Control`, `ETag`, `Last-Modified`
/// reach the client byte for byte on the miss and on the hit, and odd-case `Set-Cookie`,
/// `Vary: *` and a request's `authorization` still keep a response out of the cache.
final class CacheFieldCaseTests: XCTestCase {
    private var origin: TestOrigin?
    private var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private static let kept = [("cache-CONTROL", "max-age=60"), ("ETAG", "\"e1\""),
                               ("last-MODIFIED", "Tue, 24 Nov 2026 09:00:00 GMT"), ("x-age", "5")]

    /// curl's response head lines (`-D -`), and the body discarded.
    private func head(_ a: AirlockProcess, _ path: String, _ extra: [String] = []) throws -> [String] {
        let r = try Curl.run(["-H", "Host: cache.test"] + extra + ["-D", "-", "-o", "/dev/null", "http://127.0.0.1:\(a.port)\(path)"],
                             timeout: 10)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        return r.stdoutString.components(separatedBy: "\r\n")
    }

    func testOddCaseCacheFieldsAreRelayedExactlyAndStillDecide() throws {
        let o = try TestOrigin(.respond { r in
            var h: [(String, String)] = [("Content-Type", "text/plain")] + Self.kept
            switch r.target {
            case "/cookie": h.append(("SET-COOKIE", "id=1"))
            case "/vary": h.append(("vary", " *"))
            default: break   // /a; /auth is asked with a lower-case authorization
            }
            return TestResponse(headers: h, body: .bytes(Array("x".utf8)))
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1) + "\n    cache: {}\n")
        airlock = a

        let miss = try head(a, "/a"), hit = try head(a, "/a")
        for line in Self.kept.map({ "\($0.0): \($0.1)" }) {
            XCTAssertTrue(miss.contains(line), "miss lacks \(line): \(miss)")
            XCTAssertTrue(hit.contains(line), "hit lacks \(line): \(hit)")
        }
        XCTAssertTrue(hit.contains { $0.hasPrefix("Cache-Status: Airlock; hit") }, "\(hit)")
        for path in ["/cookie", "/vary"] {
            _ = try head(a, path)
            let again = try head(a, path)
            XCTAssertTrue(again.contains { $0.hasPrefix("Cache-Status: Airlock; fwd=uri-miss") }, "\(path): \(again)")
        }
        for _ in 0..<2 { _ = try head(a, "/auth", ["-H", "authorization: Bearer t"]) }
        XCTAssertEqual(o.requests.map(\.target), ["/a", "/cookie", "/cookie", "/vary", "/vary", "/auth", "/auth"])
    }
}
