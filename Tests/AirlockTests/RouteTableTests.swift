import AirlockConfig
import AirlockSession
import XCTest
@testable import Airlock

/// The gateway's `Route`s over the configuration's `RouteConfig`s: the CONNECT lookup over a
/// route table, and what a route with a fixed upstream computes once.
final class RouteTableTests: XCTestCase {
    /// The request path routes through each worker's compiled table: it agrees with
    /// `AirlockConfig.route(host:path:)` (RouteMatchingTests, AirlockConfigTests) on the same table.
    func testCompiledTableAgreesWithTheConfigLookup() throws {
        let config = try AirlockConfig.load(yaml: """
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
            """)
        for (host, path) in [("api.example.test", "/v1/users"), ("api.example.test", "/v1"), ("api.example.test", "/v2/users"),
                             ("api.example.test", "/"), ("www.example.test", "/"), ("a.b.example.test", "/"),
                             ("example.test", "/"), ("elsewhere.org", "/v1")] {
            let name = config.route(host: host, path: path)?.name
            XCTAssertEqual(Route.table(config).first(host: host, path: path)?.config.name, name, "\(host)\(path)")
        }
    }

    func testConnectLookupTakesTheFirstMatchingRoute() {
        let any = RouteConfig(name: "a", host: .any, upstream: .origin)
        var port = any
        port.port = 8443
        var path = any
        path.pathPrefix = "/v1"
        let table = [Route(path), Route(port), Route(any)]
        XCTAssertEqual(table.first(connectHost: "x.test", port: 443)?.config.name, "a")
        XCTAssertTrue(table.first(connectHost: "x.test", port: 8443) === table[1])
    }

    func testFixedUpstreamKeyAndHostFieldAreComputedOnce() {
        let v6 = Route(RouteConfig(name: "v6", host: .any,
                                   upstream: .fixed(UpstreamTarget(scheme: "http", host: "::1", port: 9000))))
        XCTAssertEqual(v6.fixedHostField, "[::1]:9000", "an IPv6 literal goes in brackets in Host")
        XCTAssertEqual(v6.fixedKey, UpstreamKey(scheme: "http", host: "::1", port: 9000, trust: ""))

        let plain = Route(RouteConfig(name: "p", host: .any,
                                      upstream: .fixed(UpstreamTarget(scheme: "http", host: "api.test", port: 80))))
        XCTAssertEqual(plain.fixedHostField, "api.test", "the scheme's default port is left out")

        let tls = Route(RouteConfig(name: "t", host: .any,
                                    upstream: .fixed(UpstreamTarget(scheme: "https", host: "api.test", port: 8443))))
        XCTAssertEqual(tls.fixedHostField, "api.test:8443")
        XCTAssertEqual(tls.fixedKey?.trust, tls.config.security.trustIdentity)
        XCTAssertFalse(tls.fixedKey?.trust.isEmpty ?? true, "TLS connections are pooled per trust identity")

        let origin = Route(RouteConfig(name: "o", host: .any, upstream: .origin))
        XCTAssertNil(origin.fixedKey)
        XCTAssertNil(origin.fixedHostField)
    }
}
