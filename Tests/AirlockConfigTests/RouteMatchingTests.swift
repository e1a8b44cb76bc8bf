import XCTest
@testable import AirlockConfig
import AirlockSession

final class RouteMatchingTests: XCTestCase {
    func testAnyMatchesEverything() {
        XCTAssertTrue(HostPattern.any.matches("example.com"))
        XCTAssertTrue(HostPattern.any.matches("[::1]"))
        XCTAssertTrue(HostPattern.any.matches(""))
    }

    func testExactMatch() {
        let pattern = HostPattern.exact("api.example.com")
        XCTAssertTrue(pattern.matches("api.example.com"))
        XCTAssertTrue(pattern.matches("API.Example.COM"), "ASCII case-insensitive")
        XCTAssertFalse(pattern.matches("x.api.example.com"))
        XCTAssertFalse(pattern.matches("api.example.co"))
        XCTAssertFalse(pattern.matches("api.example.com.evil"))
        XCTAssertTrue(HostPattern.exact("[::1]").matches("[::1]"))
    }

    func testSuffixMatchesSubdomainsAtAnyDepthButNotTheApex() {
        let pattern = HostPattern("*.example.com")
        XCTAssertEqual(pattern, .suffix(".example.com"))
        XCTAssertEqual(pattern?.matches("a.example.com"), true)
        XCTAssertEqual(pattern?.matches("a.b.example.com"), true)
        XCTAssertEqual(pattern?.matches("A.EXAMPLE.com"), true)
        XCTAssertEqual(pattern?.matches("example.com"), false)
        XCTAssertEqual(pattern?.matches(".example.com"), false)
        XCTAssertEqual(pattern?.matches("badexample.com"), false)
        XCTAssertEqual(pattern?.matches("a.example.com.evil"), false)
    }

    func testPatternParsingAndDescription() {
        XCTAssertEqual(HostPattern("*"), .any)
        XCTAssertEqual(HostPattern("API.example.test"), .exact("api.example.test"))
        XCTAssertNil(HostPattern("a.*.b"))
        for text in ["*", "*.example.com", "api.example.test", "[::1]"] {
            XCTAssertEqual(HostPattern(text)?.description, text)
        }
    }

    func testFirstMatchingRouteWinsInOrder() throws {
        let config = try XCTUnwrap(assertLoads("""
            routes:
              - name: api-v1
                match: { host: api.example.test, path_prefix: /v1 }
                upstream: http://127.0.0.1:9001
              - name: api
                match: { host: api.example.test }
                upstream: http://127.0.0.1:9002
              - name: wild
                match: { host: "*.example.test" }
                upstream: http://127.0.0.1:9003
              - name: exact-after-wild
                match: { host: www.example.test }
                upstream: http://127.0.0.1:9004
              - name: default
                match: { host: "*" }
                upstream: origin
            """))
        // Each worker's compiled table must agree: RouteTableTests (AirlockTests) checks it on this table.
        func route(_ host: String, _ path: String) -> String? {
            config.route(host: host, path: path)?.name
        }
        XCTAssertEqual(route("api.example.test", "/v1/users"), "api-v1")
        XCTAssertEqual(route("api.example.test", "/v1"), "api-v1")
        XCTAssertEqual(route("api.example.test", "/v2/users"), "api")
        XCTAssertEqual(route("api.example.test", "/"), "api")
        XCTAssertEqual(route("www.example.test", "/"), "wild", "an earlier wildcard shadows a later exact route")
        XCTAssertEqual(route("a.b.example.test", "/"), "wild")
        XCTAssertEqual(route("example.test", "/"), "default")
        XCTAssertEqual(route("elsewhere.org", "/v1"), "default")
    }

    func testPathPrefixIsAPlainPrefix() {
        let route = RouteConfig(name: "r", host: .any, pathPrefix: "/v1", upstream: .origin)
        XCTAssertTrue(route.matches(host: "h", path: "/v1"))
        XCTAssertTrue(route.matches(host: "h", path: "/v1/x"))
        XCTAssertTrue(route.matches(host: "h", path: "/v1beta"))
        XCTAssertFalse(route.matches(host: "h", path: "/v"))
        XCTAssertFalse(route.matches(host: "h", path: "/V1"))
        XCTAssertFalse(route.matches(host: "h", path: "v1"))
    }

    func testNoRouteMatches() {
        let config = AirlockConfig(routes: [RouteConfig(name: "only", host: .exact("a.test"), upstream: .origin)])
        XCTAssertNil(config.route(host: "b.test", path: "/"))
        XCTAssertEqual(config.route(host: "a.test", path: "/")?.name, "only")
    }
}
