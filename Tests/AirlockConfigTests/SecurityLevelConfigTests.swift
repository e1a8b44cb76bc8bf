import XCTest
@testable import AirlockConfig
import AirlockSecurity

/// `routes[].security.min_security_level`: read and checked at load, each refusal naming the key.
final class SecurityLevelConfigTests: XCTestCase {
    private let pin = "sha256/\(String(repeating: "A", count: 43))="

    private func route(_ security: String, index: Int = 0) -> String {
        var yaml = "routes:\n"
        if index > 0 {
            yaml += "  - name: first\n    match: { host: first.example.test }\n    upstream: https://127.0.0.1:9443\n"
        }
        yaml += """
              - name: r
                match: { host: "*" }
                upstream: https://127.0.0.1:9443
                security: \(security)

            """
        return yaml
    }

    func testOutOfRangeIsRefusedNamingTheKey() {
        for level in ["6", "-1", "99"] {
            assertSingleIssue(route("{ pinning: public-key, pins: [\"\(pin)\"], min_security_level: \(level) }"),
                              at: "routes[0].security.min_security_level", contains: "from 0 to 5, got \(level)")
        }
        assertSingleIssue(route("{ min_security_level: 9 }", index: 1),
                          at: "routes[1].security.min_security_level", contains: "from 0 to 5")
    }

    func testNotAnIntegerIsRefusedNamingTheKey() {
        for text in ["two", "1.5", "\"\""] {
            assertSingleIssue(route("{ pinning: public-key, pins: [\"\(pin)\"], min_security_level: \(text) }"),
                              at: "routes[0].security.min_security_level", contains: "integer from 0 to 5")
        }
    }

    func testLoweringWithoutPinningIsRefusedNamingTheKey() {
        for level in [0, 1] {
            assertSingleIssue(route("{ min_security_level: \(level) }"),
                              at: "routes[0].security.min_security_level", contains: "only with pinning")
            assertSingleIssue(route("{ pinning: none, validates_domain_name: false, min_security_level: \(level) }", index: 1),
                              at: "routes[1].security.min_security_level", contains: "only with pinning")
        }
    }

    func testLoweringWithPinningAndRaisingLoadAndRoundTrip() throws {
        let cases: [(String, Int)] = [
            ("{ pinning: public-key, pins: [\"\(pin)\"], min_security_level: 0 }", 0),
            ("{ pinning: public-key, pins: [\"\(pin)\"], min_security_level: 1 }", 1),
            ("{ min_security_level: 3 }", 3),
            ("{ pinning: public-key, pins: [\"\(pin)\"] }", 2),
        ]
        for (security, level) in cases {
            guard let config = assertLoads(route(security)) else { continue }
            XCTAssertEqual(config.routes.first?.security.policy.minimumSecurityLevel, level, security)
            let rendered = config.renderYAML()
            // Every default filled in: the default level 2 is printed too.
            XCTAssertTrue(rendered.contains("      min_security_level: \(level)\n"), rendered)
            XCTAssertEqual(try AirlockConfig.load(yaml: rendered), config, rendered)
        }
    }
}
