import AirlockSecurity
import XCTest
@testable import AirlockConfig

/// `egress:` on a route: parsed, refused at load with the key path named, the policy in force
/// worked out from the listener and the upstream kind, rendered by check-config and read back.
final class EgressConfigTests: XCTestCase {
    private func yaml(listen: String = "127.0.0.1:8080", upstream: String = "origin", egress: String = "") -> String {
        """
        listen: \(listen)
        allow_open_proxy: true
        routes:
          - name: r
            match: { host: "*" }
            upstream: \(upstream)
        \(egress)
        """
    }

    func testParsesAllowAndDenyLists() throws {
        let config = try XCTUnwrap(assertLoads(yaml(egress: """
                egress:
                  allow: [10.0.0.0/8, "fd00::/8", 192.168.1.7]
                  deny: 10.1.0.0/16
            """)))
        let e = config.routes[0].egress
        XCTAssertEqual(e.allow.map(\.description), ["10.0.0.0/8", "fd00::/8", "192.168.1.7/32"])
        XCTAssertEqual(e.deny.map(\.description), ["10.1.0.0/16"])
        XCTAssertFalse(e.denyInternal, "the file's lists only: the listener decides the rest")
    }

    func testTheListenerAndTheUpstreamKindDecideTheInternalClasses() throws {
        let loopback = try XCTUnwrap(assertLoads(yaml()))
        XCTAssertFalse(loopback.routes[0].effectiveEgress(listen: loopback.listen).denyInternal, "loopback: as today")
        let shared = try XCTUnwrap(assertLoads(yaml(listen: "0.0.0.0:8080")))
        XCTAssertTrue(shared.routes[0].effectiveEgress(listen: shared.listen).denyInternal, "origin route, shared listener")
        let fixed = try XCTUnwrap(assertLoads(yaml(listen: "0.0.0.0:8080", upstream: "http://10.0.0.5:8080")))
        XCTAssertFalse(fixed.routes[0].effectiveEgress(listen: fixed.listen).denyInternal,
                       "a fixed upstream is the operator's own choice")
        let ip = try XCTUnwrap(IPAddress(parsing: "169.254.169.254"))
        XCTAssertEqual(shared.routes[0].effectiveEgress(listen: shared.listen).evaluate(ip), .denied(.linkLocal))
    }

    func testRefusalsNameTheKeyPath() {
        assertSingleIssue(yaml(egress: "    egress: { allow: [10.0.0.0/8, 10.1.0.0/8] }"), at: "routes[0].egress.allow[1]",
                          contains: "past its /8")
        assertSingleIssue(yaml(egress: "    egress: { deny: [localhost] }"), at: "routes[0].egress.deny[0]",
                          contains: "not an IPv4 or IPv6 address")
        assertSingleIssue(yaml(egress: "    egress: { deny: [127.1] }"), at: "routes[0].egress.deny[0]")
        assertSingleIssue(yaml(egress: "    egress: { deny: [\"::/129\"] }"), at: "routes[0].egress.deny[0]",
                          contains: "0...128")
        assertSingleIssue(yaml(egress: "    egress: { allow: { a: 1 } }"), at: "routes[0].egress.allow")
        assertSingleIssue(yaml(egress: "    egress: { alow: [10.0.0.0/8] }"), at: "routes[0].egress.alow",
                          contains: "allow")
        assertSingleIssue(yaml(egress: "    egress: [10.0.0.0/8]"), at: "routes[0].egress")
    }

    func testCheckConfigPrintsThePolicyInForceAndReadsBack() throws {
        let shared = try XCTUnwrap(assertLoads(yaml(listen: "0.0.0.0:8080", egress: """
                egress: { allow: [10.0.0.0/8], deny: ["fd00::/8"] }
            """)))
        let text = shared.renderYAML()
        for line in ["    egress:", "      allow: [10.0.0.0/8]", "      deny: [fd00::/8]",
                     "    # egress in force: denies loopback, private, shared-address-space, link-local, unique-local, "
                        + "multicast, reserved unless allowed (origin route on non-loopback listen 0.0.0.0:8080); "
                        + "denies the deny list; never dials 0.0.0.0/8 or ::"] {
            XCTAssertTrue(text.contains(line + "\n"), "missing \(line) in\n\(text)")
        }
        XCTAssertEqual(try AirlockConfig.load(yaml: text), shared)
        let local = try XCTUnwrap(assertLoads(yaml())).renderYAML()
        XCTAssertTrue(local.contains("    # egress in force: allows internal addresses (loopback listen 127.0.0.1:8080); "
                                     + "never dials 0.0.0.0/8 or ::\n"), local)
        XCTAssertFalse(local.contains("    egress:\n"), "no lists, no block")
    }

    /// A host a browser reads as IPv4 but that is not a plain dotted quad is refused at load
    /// too, in an upstream URL and in a route's match.
    func testNumericHostsThatAreNotDottedQuadsAreRefused() {
        for host in ["0177.0.0.1", "127.1", "2130706433", "0x7f000001", "0x7f.1", "127.0.0.01"] {
            assertSingleIssue(yaml(upstream: "http://\(host):8080"), at: "routes[0].upstream")
            XCTAssertEqual(loadIssues("""
                routes:
                  - name: r
                    match: { host: "\(host)" }
                    upstream: origin
                """).map(\.keyPath), ["routes[0].match.host"], host)
        }
        XCTAssertNotNil(assertLoads(yaml(upstream: "http://127.0.0.1:8080")))
        XCTAssertNotNil(assertLoads(yaml(upstream: "http://api.v2.example:8080")))
        XCTAssertNotNil(assertLoads(yaml(upstream: "http://1password.com:8080")))
    }
}
