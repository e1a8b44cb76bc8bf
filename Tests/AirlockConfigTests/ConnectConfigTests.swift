import XCTest
@testable import AirlockConfig

/// `connect:`, `connect_ports:`, `match.port` and `limits.tunnel_idle_timeout`: parsed, refused
/// at load with the key named, rendered by check-config and read back equal; CONNECT route
/// matching.
final class ConnectConfigTests: XCTestCase {
    private func route(_ extra: String, match: String = "host: \"*\"", upstream: String = "origin") -> String {
        """
        routes:
          - name: r
            match: { \(match) }
            upstream: \(upstream)
        \(extra)
        """
    }

    func testDefaultsDenyAndPort443() throws {
        let config = try XCTUnwrap(assertLoads(defaultRouteYAML))
        XCTAssertEqual(config.routes[0].connect, .deny)
        XCTAssertEqual(config.routes[0].connectPorts, [443])
        XCTAssertNil(config.routes[0].port)
        XCTAssertEqual(config.limits.tunnelIdleTimeout, .seconds(300))
    }

    func testParsesPoliciesPortsAndMatchPort() throws {
        let yaml = """
            limits:
              tunnel_idle_timeout: 2s
            routes:
              - name: api
                match: { host: api.example.test, port: 8443 }
                connect: tunnel
                upstream: origin
              - name: fixed
                match: { host: fixed.test }
                connect: tunnel
                connect_ports: [443, 8443, 443]
                upstream: https://127.0.0.1:9443
              - name: elsewhere
                match: { host: "*" }
                connect: tunnel
                connect_ports: 993
                upstream: origin
              - name: closed
                match: { host: "*.closed.test" }
                connect: deny
                upstream: origin

            """
        let config = try XCTUnwrap(assertLoads(yaml))
        XCTAssertEqual(config.limits.tunnelIdleTimeout, .seconds(2))
        XCTAssertEqual(config.routes.map(\.connect), [.tunnel, .tunnel, .tunnel, .deny])  // intercept: CACommandTests (it needs a CA)
        XCTAssertEqual(config.routes.map(\.connectPorts), [[443], [443, 8443], [993], [443]])
        XCTAssertEqual(config.routes[0].port, 8443)

        // check-config renders every key, and the rendering loads back equal.
        let text = config.renderYAML()
        for line in ["  tunnel_idle_timeout: 2s", "      port: 8443", "    connect: tunnel",
                     "    connect_ports: [443, 8443]", "    connect: deny", "    connect_ports: [443]"] {
            XCTAssertTrue(text.contains(line + "\n"), "missing \(line) in\n\(text)")
        }
        XCTAssertEqual(try AirlockConfig.load(yaml: text), config)
    }

    func testRefusals() {
        assertSingleIssue(route("    connect: allow"), at: "routes[0].connect", contains: "deny, tunnel, intercept")
        assertSingleIssue(route("    connect: Tunnel"), at: "routes[0].connect")
        for bad in ["[0]", "[65536]", "[443, 70000]", "[https]", "[-1]", "[\"\"]", "[]", "0", "{ a: 1 }"] {
            let issues = loadIssues(route("    connect: tunnel\n    connect_ports: \(bad)"))
            XCTAssertEqual(issues.map(\.keyPath).first, "routes[0].connect_ports", "\(bad): \(issues)")
        }
    }

    func testMatchPortRefusals() {
        for bad in ["0", "65536", "x", "-3"] {
            assertSingleIssue(route("", match: "host: \"*\", port: \(bad)"), at: "routes[0].match.port", contains: "1...65535")
        }
    }

    func testTunnelToAPlainHTTPUpstreamIsRefused() {
        assertSingleIssue(route("    connect: tunnel", upstream: "http://127.0.0.1:9000"), at: "routes[0].connect",
                          contains: "https://")
    }

    func testTunnelIdleTimeoutMustBePositive() {
        assertSingleIssue("limits:\n  tunnel_idle_timeout: 0s\n" + defaultRouteYAML, at: "limits.tunnel_idle_timeout")
    }

    func testConnectMatching() {
        let any = RouteConfig(name: "a", host: .any, upstream: .origin)
        XCTAssertTrue(any.matchesConnect(host: "x.test", port: 443))
        var port = any
        port.port = 8443
        XCTAssertFalse(port.matchesConnect(host: "x.test", port: 443))
        XCTAssertTrue(port.matchesConnect(host: "x.test", port: 8443))
        XCTAssertFalse(port.matches(host: "x.test", path: "/", port: 80), "match.port applies to every request")
        XCTAssertTrue(port.matches(host: "x.test", path: "/", port: 8443))
        var slash = any
        slash.pathPrefix = "/"
        XCTAssertTrue(slash.matchesConnect(host: "x.test", port: 443), "path / matches CONNECT")
        var path = any
        path.pathPrefix = "/v1"
        XCTAssertFalse(path.matchesConnect(host: "x.test", port: 443), "a route with a path never takes CONNECT")
        XCTAssertFalse(RouteConfig(name: "b", host: .exact("api.test"), upstream: .origin).matchesConnect(host: "x.test", port: 443))
    }

    /// `connect: intercept` needs the CA, and an https upstream when the upstream is fixed
    /// (no downgrade of what the client encrypted); with both it loads and renders. Loading reads
    /// the CA's paths only (the gateway opens the files: CACommandTests, OpenedConfigTests).
    func testInterceptNeedsTheCAAndAnHTTPSUpstream() throws {
        let ca = "ca:\n  certificate: certs/airlock-ca.pem\n  key: certs/airlock-ca.key\n"
        func route(_ upstream: String) -> String {
            "routes:\n  - name: api\n    match: { host: api.test }\n    connect: intercept\n    upstream: \(upstream)\n"
        }
        assertSingleIssue(route("origin"), at: "routes[0].connect", contains: "needs the local CA")
        assertSingleIssue(ca + route("http://127.0.0.1:8080"), at: "routes[0].upstream", contains: "https://")
        let loaded = try XCTUnwrap(assertLoads(ca + route("https://127.0.0.1:8443")))
        XCTAssertEqual(loaded.routes[0].connect, .intercept)
        XCTAssertTrue(loaded.renderYAML().contains("    connect: intercept\n"), loaded.renderYAML())
        XCTAssertEqual(try AirlockConfig.load(yaml: loaded.renderYAML()), loaded)
        XCTAssertNotNil(assertLoads(ca + route("origin")))
    }
}
