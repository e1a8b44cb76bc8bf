import XCTest
@testable import AirlockConfig

/// A route's `resume:` and `cache:` blocks (issue #21): defaults, sizes, refusals naming the key,
/// and check-config's rendering read back equal.
final class DownloadsConfigTests: XCTestCase {
    private func routesYAML(_ block: String) -> String {
        """
        routes:
          - name: plain
            match: { host: plain.test }
            upstream: origin
          - name: dl
            match: { host: "*" }
            upstream: http://127.0.0.1:9000
        \(block.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

        """
    }

    func testDefaultsResumeOnCacheOff() throws {
        let config = try XCTUnwrap(assertLoads(routesYAML("")))
        for route in config.routes {
            XCTAssertEqual(route.resume, ResumeConfig(enabled: true, maxAttempts: 3))
            XCTAssertNil(route.cache)
        }
    }

    func testBlocksLoad() throws {
        let config = try XCTUnwrap(assertLoads(routesYAML("""
            resume: { enabled: false, max_attempts: 5 }
            cache: { memory: 64MiB, purge_to: 32MiB, max_object: 1MiB }
            """)))
        XCTAssertEqual(config.routes[1].resume, ResumeConfig(enabled: false, maxAttempts: 5))
        XCTAssertEqual(config.routes[1].cache, CacheConfig(memory: 64 << 20, purgeTo: 32 << 20, maxObject: 1 << 20))
        XCTAssertNil(config.routes[0].cache)
        XCTAssertEqual(config.routes[0].resume, ResumeConfig())
    }

    /// `heuristic` (RFC 9111 4.2.2): off unless given, a percentage 1%...100%.
    func testHeuristicIsAPercentageAndOffByDefault() throws {
        let config = try XCTUnwrap(assertLoads(routesYAML("cache: { heuristic: 10% }")))
        XCTAssertEqual(config.routes[1].cache, CacheConfig(heuristicPercent: 10))
        XCTAssertNil(try XCTUnwrap(assertLoads(routesYAML("cache: {}"))).routes[1].cache?.heuristicPercent)
        for (text, percent) in [("1%", 1), ("100%", 100), ("\"25%\"", 25)] {
            let c = try XCTUnwrap(assertLoads(routesYAML("cache: { heuristic: \(text) }")))
            XCTAssertEqual(c.routes[1].cache?.heuristicPercent, percent, text)
        }
    }

    func testEmptyCacheBlockIsEveryDefault() throws {
        let config = try XCTUnwrap(assertLoads(routesYAML("cache: {}\nresume: {}")))
        XCTAssertEqual(config.routes[1].cache, CacheConfig(memory: 100 << 20, purgeTo: 60 << 20, maxObject: 4 << 20))
        XCTAssertEqual(config.routes[1].resume, ResumeConfig(enabled: true, maxAttempts: 3))
        let partial = try XCTUnwrap(assertLoads(routesYAML("cache: { memory: 8MiB, purge_to: 4096KiB, max_object: 65536 }")))
        XCTAssertEqual(partial.routes[1].cache, CacheConfig(memory: 8 << 20, purgeTo: 4 << 20, maxObject: 65536))
    }

    func testRefusalsNameTheKey() {
        let cases: [(String, String, String)] = [
            ("cache: { memory: 10MiB, purge_to: 10MiB }", "routes[1].cache.purge_to", "less than memory"),
            ("cache: { memory: 10MiB, purge_to: 20MiB }", "routes[1].cache.purge_to", "less than memory"),
            ("cache: { memory: 10MiB, purge_to: 5MiB, max_object: 11MiB }", "routes[1].cache.max_object", "at most memory"),
            ("cache: { memory: 1MiB, max_object: 1MiB }", "routes[1].cache.purge_to", "60MiB default"),
            ("cache: { memory: lots }", "routes[1].cache.memory", "expected a size in bytes"),
            ("cache: { max_object: 0 }", "routes[1].cache.max_object", "above 0"),
            ("cache: { memory: 10MB }", "routes[1].cache.memory", "expected a size in bytes"),
            ("cache: { purge_too: 1MiB }", "routes[1].cache.purge_too", "did you mean \"purge_to\""),
            ("cache: on", "routes[1].cache", "expected a mapping"),
            ("cache: { heuristic: 10 }", "routes[1].cache.heuristic", "expected a percentage 1%...100%"),
            ("cache: { heuristic: 0% }", "routes[1].cache.heuristic", "got \"0%\""),
            ("cache: { heuristic: 101% }", "routes[1].cache.heuristic", "got \"101%\""),
            ("cache: { heuristic: -5% }", "routes[1].cache.heuristic", "expected a percentage"),
            ("cache: { heuristic: 10.5% }", "routes[1].cache.heuristic", "expected a percentage"),
            ("cache: { heuristic: \"%\" }", "routes[1].cache.heuristic", "expected a percentage"),
            ("cache: { heuristic: [10%] }", "routes[1].cache.heuristic", "expected a single value"),
            ("resume: { max_attempts: 0 }", "routes[1].resume.max_attempts", "1...100"),
            ("resume: { max_attempts: 101 }", "routes[1].resume.max_attempts", "1...100"),
            ("resume: { max_attempts: three }", "routes[1].resume.max_attempts", "1...100"),
            ("resume: { enabled: maybe }", "routes[1].resume.enabled", "true or false"),
            ("resume: true", "routes[1].resume", "expected a mapping"),
            ("resume: { attempts: 2 }", "routes[1].resume.attempts", "unknown key"),
        ]
        for (block, keyPath, fragment) in cases {
            assertSingleIssue(routesYAML(block), at: keyPath, contains: fragment)
        }
    }

    func testCheckConfigRendersBothBlocksAndReadsThemBack() throws {
        let config = try XCTUnwrap(assertLoads(routesYAML("""
            resume: { enabled: false, max_attempts: 5 }
            cache: { memory: 64MiB, purge_to: 1000, max_object: 65536KiB }
            """)))
        let text = config.renderYAML()
        for line in ["    resume: { enabled: true, max_attempts: 3 }\n    # cache: off\n",
                     "    resume: { enabled: false, max_attempts: 5 }\n    cache: { memory: 64MiB, purge_to: 1000, max_object: 64MiB }\n"] {
            XCTAssertTrue(text.contains(line), "missing \(line) in\n\(text)")
        }
        XCTAssertEqual(try AirlockConfig.load(yaml: text), config, text)
        let heuristic = try XCTUnwrap(assertLoads(routesYAML("cache: { heuristic: 10% }")))
        let heuristicText = heuristic.renderYAML()
        let line = "    cache: { memory: 100MiB, purge_to: 60MiB, max_object: 4MiB, heuristic: 10% }\n"
        XCTAssertTrue(heuristicText.contains(line), "missing \(line) in\n\(heuristicText)")
        XCTAssertEqual(try AirlockConfig.load(yaml: heuristicText), heuristic, heuristicText)
        XCTAssertEqual(AirlockConfig.renderSize(3 << 30), "3GiB")
        XCTAssertEqual(AirlockConfig.renderSize(1536), "1536")
        XCTAssertEqual(AirlockConfig.renderSize(1536 << 10), "1536KiB")
    }

    /// A reload compares routes: a changed cache or resume block is a change.
    func testRouteEqualityIncludesBothBlocks() throws {
        let a = try XCTUnwrap(assertLoads(routesYAML("cache: {}")))
        let b = try XCTUnwrap(assertLoads(routesYAML("cache: { memory: 200MiB }")))
        let c = try XCTUnwrap(assertLoads(routesYAML("cache: {}\nresume: { max_attempts: 2 }")))
        XCTAssertNotEqual(a.routes[1], b.routes[1])
        XCTAssertNotEqual(a.routes[1], c.routes[1])
        let d = try XCTUnwrap(assertLoads(routesYAML("cache: { heuristic: 10% }")))
        XCTAssertNotEqual(a.routes[1], d.routes[1])
        XCTAssertEqual(a.routes[1], try XCTUnwrap(assertLoads(routesYAML("cache: {}"))).routes[1])
    }
}
