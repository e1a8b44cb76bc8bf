import XCTest
@testable import AirlockConfig

/// `limits.splice`: on by default, `false` read, anything but a boolean refused with its key
/// path, rendered by check-config and read back equal.
final class SpliceConfigTests: XCTestCase {
    func testOnByDefault() throws {
        let config = try XCTUnwrap(assertLoads(defaultRouteYAML))
        XCTAssertTrue(config.limits.splice)
        XCTAssertTrue(config.renderYAML().contains("  splice: true\n"))
    }

    func testOffIsReadRenderedAndReadBack() throws {
        let config = try XCTUnwrap(assertLoads("limits:\n  splice: false\n" + defaultRouteYAML))
        XCTAssertFalse(config.limits.splice)
        let text = config.renderYAML()
        XCTAssertTrue(text.contains("  splice: false\n"), text)
        XCTAssertEqual(try AirlockConfig.load(yaml: text), config)
    }

    func testNonBooleanIsRefused() {
        for bad in ["yes", "1", "auto", "[true]"] {
            assertSingleIssue("limits:\n  splice: \(bad)\n" + defaultRouteYAML, at: "limits.splice")
        }
    }
}
