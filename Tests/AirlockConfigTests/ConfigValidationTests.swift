import XCTest
@testable import AirlockConfig

/// One test per validation rule, each asserting the key path it reports.
final class ConfigValidationTests: XCTestCase {
    // MARK: Unknown keys

    func testUnknownTopLevelKeySuggestsTheKnownOne() {
        assertSingleIssue("listn: 127.0.0.1:1\n" + defaultRouteYAML, at: "listn", contains: "did you mean \"listen\"")
    }

    func testUnknownLimitsKey() {
        assertSingleIssue("limits:\n  header_timout: 10s\n" + defaultRouteYAML,
                          at: "limits.header_timout", contains: "did you mean \"header_timeout\"")
    }

    func testUnknownRouteKey() {
        assertSingleIssue("""
            routes:
              - name: r
                match: { host: "*" }
                upstream: origin
                upstreams: origin
            """, at: "routes[0].upstreams", contains: "unknown key")
    }

    func testUnknownMatchKey() {
        assertSingleIssue(routeYAML(host: "\"*\", path: /v1"), at: "routes[0].match.path", contains: "unknown key")
    }

    /// Insecure or unreadable security settings fail the load, naming the key.
    func testSecurityBlockIsValidatedAtLoad() {
        func route(_ upstream: String, _ security: String) -> String {
            """
            routes:
              - name: r
                match: { host: "*" }
                upstream: \(upstream)
                security: \(security)
            """
        }
        assertSingleIssue(route("http://127.0.0.1:9000", "{ pinning: public-key, pins: [\"sha256/\(String(repeating: "A", count: 43))=\"] }"),
                          at: "routes[0].security.pinning", contains: "TLS upstream")
        assertSingleIssue(route("https://127.0.0.1:9443", "{ allow_invalid_certificates: true }"),
                          at: "routes[0].security.allow_invalid_certificates", contains: "pin")
        assertSingleIssue(route("https://127.0.0.1:9443", "{ pinning: public-key, pins: [\"sha256/AAAA\"] }"),
                          at: "routes[0].security.pins[0]", contains: "32")
        assertSingleIssue(route("https://127.0.0.1:9443", "{ pinning: certificate, certificates: [/nonexistent/pinned.pem] }"),
                          at: "routes[0].security.certificates[0]", contains: "no certificate files")
        assertSingleIssue(route("https://127.0.0.1:9443", "{ pinning: sometimes }"),
                          at: "routes[0].security.pinning", contains: "public-key")
    }

    // MARK: Types

    func testWrongShapesAreReported() {
        assertSingleIssue("limits: 5\n" + defaultRouteYAML, at: "limits", contains: "expected a mapping")
        assertSingleIssue("routes: { a: b }\n", at: "routes", contains: "expected a list")
        assertSingleIssue("listen: [a]\n" + defaultRouteYAML, at: "listen", contains: "single value")
        assertSingleIssue("allow_open_proxy: maybe\n" + defaultRouteYAML, at: "allow_open_proxy", contains: "true or false")
        assertSingleIssue("io_uring: on\n" + defaultRouteYAML, at: "io_uring", contains: "expected auto or off, got \"on\"")
        assertSingleIssue("listen:\n" + defaultRouteYAML, at: "listen", contains: "value is required")
        assertSingleIssue("routes:\n  - just-a-string\n", at: "routes[0]", contains: "expected a mapping")
    }

    // MARK: Durations and sizes

    func testDurationsMustParse() {
        for bad in ["10 s", "10sec", "-1s", "1.5s", "s", "10S", "999999999999999h"] {
            assertSingleIssue("limits:\n  header_timeout: \"\(bad)\"\n" + defaultRouteYAML,
                              at: "limits.header_timeout", contains: "expected a duration")
        }
    }

    func testDurationsMustBePositive() {
        for key in ["header_timeout", "idle_timeout", "connect_timeout", "upstream_timeout", "drain_timeout"] {
            assertSingleIssue("limits:\n  \(key): 0ms\n" + defaultRouteYAML, at: "limits.\(key)", contains: "greater than 0")
        }
    }

    func testSizesMustParse() {
        for bad in ["64KB", "1 MiB", "-1", "1.5", "lots"] {
            assertSingleIssue("limits:\n  body_bytes: \"\(bad)\"\n" + defaultRouteYAML,
                              at: "limits.body_bytes", contains: "expected a size")
        }
    }

    func testSizesAndCountsMustBePositive() {
        assertSingleIssue("limits:\n  body_bytes: 0\n" + defaultRouteYAML, at: "limits.body_bytes", contains: "positive")
        assertSingleIssue("limits:\n  header_count: 0\n" + defaultRouteYAML, at: "limits.header_count", contains: "positive")
        assertSingleIssue("limits:\n  max_connections: 0\n" + defaultRouteYAML, at: "limits.max_connections", contains: "positive")
        assertSingleIssue("limits:\n  header_count: 1KiB\n" + defaultRouteYAML, at: "limits.header_count", contains: "integer")
        assertSingleIssue("limits:\n  request_line_bytes: 8\n" + defaultRouteYAML,
                          at: "limits.request_line_bytes", contains: "at least 16")
    }

    func testHeaderBytesMustCoverRequestLine() {
        assertSingleIssue("limits:\n  request_line_bytes: 16KiB\n  header_bytes: 8KiB\n" + defaultRouteYAML,
                          at: "limits.header_bytes", contains: "request_line_bytes")
    }

    func testZeroIdlePoolIsAllowed() throws {
        let config = try XCTUnwrap(assertLoads("limits:\n  max_idle_per_upstream: 0\n" + defaultRouteYAML))
        XCTAssertEqual(config.limits.maxIdlePerUpstream, 0)
    }

    // MARK: workers and listen

    func testWorkersRange() {
        for good in ["auto", "1", "256"] {
            XCTAssertNotNil(assertLoads("workers: \(good)\n" + defaultRouteYAML), good)
        }
        for bad in ["0", "257"] {
            assertSingleIssue("workers: \(bad)\n" + defaultRouteYAML, at: "workers", contains: "1...256")
        }
        assertSingleIssue("workers: many\n" + defaultRouteYAML, at: "workers", contains: "auto")
        assertSingleIssue("workers: -2\n" + defaultRouteYAML, at: "workers", contains: "auto")
    }

    func testListenMustParse() {
        for good in ["127.0.0.1:0", "\"[::1]:8080\"", "localhost:0", "0.0.0.0:65535"] {
            XCTAssertNotNil(assertLoads("listen: \(good)\nallow_open_proxy: true\n" + defaultRouteYAML), good)
        }
        for bad in ["127.0.0.1", "127.0.0.1:65536", "127.0.0.1:http", ":8080", "\"::1:8080\"", "\"[::1\"",
                    "\"[nope]:80\"", "\"a b:80\"", "127.0.0.1:-1"] {
            assertSingleIssue("listen: \(bad)\n" + defaultRouteYAML, at: "listen")
        }
    }

    // MARK: Routes

    func testAtLeastOneRoute() {
        assertSingleIssue("workers: 1\n", at: "routes", contains: "at least one route")
        assertSingleIssue("routes: []\n", at: "routes", contains: "at least one route")
        assertSingleIssue("routes:\n", at: "routes", contains: "at least one route")
        assertSingleIssue("", at: "routes", contains: "at least one route")
    }

    func testRouteNameRequiredNonEmptyAndUnique() {
        assertSingleIssue("routes:\n  - match: { host: \"*\" }\n    upstream: origin\n", at: "routes[0].name", contains: "required")
        assertSingleIssue(routeYAML(name: "\"\""), at: "routes[0].name", contains: "empty")
        assertSingleIssue(routeYAML(name: "\"my route\""), at: "routes[0].name", contains: "metric label")
        assertSingleIssue("""
            routes:
              - name: api
                match: { host: a.example }
                upstream: origin
              - name: api
                match: { host: b.example }
                upstream: origin
            """, at: "routes[1].name", contains: "duplicate route name \"api\" (also routes[0])")
    }

    func testMatchAndHostRequired() {
        assertSingleIssue("routes:\n  - name: r\n    upstream: origin\n", at: "routes[0].match", contains: "required")
        assertSingleIssue("routes:\n  - name: r\n    match: { path_prefix: /x }\n    upstream: origin\n",
                          at: "routes[0].match.host", contains: "required")
    }

    func testHostPatternSyntax() {
        for bad in ["\"api.*.test\"", "\"*example.com\"", "\"*.\"", "\"a..b\"", "\"api.example.test:8080\"",
                    "\"::1\"", "\"[nope]\"", "\"a b\""] {
            assertSingleIssue(routeYAML(host: bad), at: "routes[0].match.host")
        }
        for good in ["\"*\"", "\"*.example.com\"", "API.Example.test", "\"[::1]\"", "10.0.0.1"] {
            XCTAssertNotNil(assertLoads(routeYAML(host: good)), good)
        }
    }

    func testPathPrefixMustStartWithSlash() {
        assertSingleIssue(routeYAML(pathPrefix: "v1"), at: "routes[0].match.path_prefix", contains: "must start with \"/\"")
        assertSingleIssue(routeYAML(pathPrefix: "\"\""), at: "routes[0].match.path_prefix", contains: "must start with \"/\"")
        assertSingleIssue(routeYAML(pathPrefix: "\"/a?b\""), at: "routes[0].match.path_prefix", contains: "\"?\"")
    }

    func testUpstreamRequired() {
        assertSingleIssue("routes:\n  - name: r\n    match: { host: \"*\" }\n", at: "routes[0].upstream", contains: "required")
    }

    func testUpstreamURLRules() {
        let cases: [(String, String)] = [
            ("ftp://example.com", "scheme must be http or https"),
            ("example.com", "expected \"origin\""),
            ("Origin", "expected \"origin\""),
            ("http://user:pw@example.com", "userinfo"),
            ("http://user@example.com", "userinfo"),
            ("http://example.com/api", "must not contain a path"),
            ("http://example.com/?q=1", "query"),
            ("http://example.com#frag", "fragment"),
            ("http://", "must name a host"),
            ("http://:8080", "must name a host"),
            ("http://example.com:0", "port must be"),
            ("http://example.com:99999", "port must be"),
            ("http://example.com:", "port must be"),
            ("http://::1:80", "brackets"),
            ("http://[::1:80", "]"),
            ("http://exa_mple com", "not a valid host"),
        ]
        for (url, fragment) in cases {
            assertSingleIssue(routeYAML(host: "a.example", upstream: "\"\(url)\""), at: "routes[0].upstream", contains: fragment)
        }
    }

    func testUpstreamURLAccepted() throws {
        let cases: [(String, UpstreamTarget, String)] = [
            ("http://127.0.0.1:9000", UpstreamTarget(scheme: "http", host: "127.0.0.1", port: 9000), "127.0.0.1:9000"),
            ("HTTPS://API.Example.com/", UpstreamTarget(scheme: "https", host: "api.example.com", port: 443), "api.example.com"),
            ("http://example.com:80", UpstreamTarget(scheme: "http", host: "example.com", port: 80), "example.com"),
            ("https://example.com:80", UpstreamTarget(scheme: "https", host: "example.com", port: 80), "example.com:80"),
            ("http://[::1]:9000", UpstreamTarget(scheme: "http", host: "::1", port: 9000), "[::1]:9000"),
        ]
        for (url, expected, authority) in cases {
            let config = try XCTUnwrap(assertLoads(routeYAML(host: "a.example", upstream: "\"\(url)\"")))
            XCTAssertEqual(config.routes[0].upstream, .fixed(expected), url)
            XCTAssertEqual(expected.authority, authority, url)
        }
    }

    // MARK: Open-proxy guard

    func testOpenProxyRefusedOnNonLoopbackListen() {
        for listen in ["0.0.0.0:8080", "10.1.2.3:8080", "\"[::]:8080\"", "example.com:8080", "\"[2001:db8::1]:80\""] {
            assertSingleIssue("listen: \(listen)\n" + defaultRouteYAML, at: "routes[0].match.host", contains: "open proxy")
        }
    }

    func testOpenProxyGuardReportsEveryOffendingRoute() {
        let issues = loadIssues("""
            listen: 0.0.0.0:8080
            routes:
              - name: a
                match: { host: "*", path_prefix: /only }
                upstream: origin
              - name: b
                match: { host: "*" }
                upstream: origin
            """)
        XCTAssertEqual(issues.map(\.keyPath), ["routes[0].match.host", "routes[1].match.host"])
        XCTAssertTrue(issues.allSatisfy { $0.message.contains("allow_open_proxy: true") })
    }

    func testOpenProxyAllowedWhenSafe() {
        // Loopback listeners.
        for listen in ["127.0.0.1:8080", "127.9.9.9:1", "\"[::1]:8080\"", "localhost:0", "LOCALHOST:1"] {
            XCTAssertNotNil(assertLoads("listen: \(listen)\n" + defaultRouteYAML), listen)
        }
        // Explicit opt-in.
        XCTAssertNotNil(assertLoads("listen: 0.0.0.0:8080\nallow_open_proxy: true\n" + defaultRouteYAML))
        // Origin routes limited to named hosts, and catch-all routes to a fixed upstream.
        XCTAssertNotNil(assertLoads("listen: 0.0.0.0:8080\n" + routeYAML(host: "\"*.internal.example\"")))
        XCTAssertNotNil(assertLoads("listen: 0.0.0.0:8080\n" + routeYAML(upstream: "http://10.0.0.5:80")))
    }

    func testValidateCatchesOverridesThatOpenTheProxy() {
        var config = AirlockConfig.embeddedDefault
        XCTAssertNoThrow(try config.validate())
        config.listen = ListenAddress(host: "0.0.0.0", port: 8080)
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.map(\.keyPath), ["routes[0].match.host"])
        }
        config.allowOpenProxy = true
        XCTAssertNoThrow(try config.validate())
    }

    func testValidateChecksProgrammaticValues() {
        var config = AirlockConfig.embeddedDefault
        config.workers = 0
        config.limits.idleTimeout = .zero
        config.routes.append(RouteConfig(name: "default", host: .any, pathPrefix: "x", upstream: .origin))
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.map(\.keyPath),
                           ["workers", "limits.idle_timeout", "routes[1].name", "routes[1].match.path_prefix"])
        }
    }
}
