import XCTest
@testable import AirlockConfig
import AirlockSerialization

final class AirlockConfigLoadingTests: XCTestCase {
    /// What `workers: auto` must mean (README: "the number of active cores"), from the platform, not from
    /// `AirlockConfig`.
    private var activeCores: Int { min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 256) }

    /// The README's default for every `limits` key, written out here (not read from `LimitsConfig()`).
    private func assertREADMELimits(_ limits: LimitsConfig, _ what: String,
                                    file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(limits.requestLineBytes, 8192, what, file: file, line: line)
        XCTAssertEqual(limits.headerBytes, 65536, what, file: file, line: line)
        XCTAssertEqual(limits.headerCount, 100, what, file: file, line: line)
        XCTAssertEqual(limits.bodyBytes, 104_857_600, what, file: file, line: line)
        XCTAssertEqual(limits.headerTimeout, .seconds(10), what, file: file, line: line)
        XCTAssertEqual(limits.idleTimeout, .seconds(75), what, file: file, line: line)
        XCTAssertEqual(limits.connectTimeout, .seconds(5), what, file: file, line: line)
        XCTAssertEqual(limits.upstreamTimeout, .seconds(60), what, file: file, line: line)
        XCTAssertEqual(limits.drainTimeout, .seconds(10), what, file: file, line: line)
        XCTAssertEqual(limits.maxIdlePerUpstream, 64, what, file: file, line: line)
        XCTAssertEqual(limits.maxConnections, 10000, what, file: file, line: line)
    }

    func testFullExampleLoadsIntoExpectedValues() throws {
        let config = try AirlockConfig.load(yaml: fullExampleYAML)
        XCTAssertEqual(config.listen, ListenAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(config.workers, activeCores)
        XCTAssertFalse(config.allowOpenProxy)
        XCTAssertEqual(config.ioUring, .auto)
        assertREADMELimits(config.limits, "the example spells out the defaults")
        assertREADMELimits(LimitsConfig(), "LimitsConfig() holds the README's defaults")

        XCTAssertEqual(config.routes, [
            RouteConfig(
                name: "api", host: .exact("api.example.test"), pathPrefix: "/v1",
                upstream: .fixed(UpstreamTarget(scheme: "http", host: "127.0.0.1", port: 9000))
            ),
            RouteConfig(name: "default", host: .any, upstream: .origin),
        ])
    }

    func testEmbeddedDefault() throws {
        let config = AirlockConfig.embeddedDefault
        XCTAssertEqual(config.listen.description, "127.0.0.1:8080")
        XCTAssertEqual(config.workers, activeCores)
        XCTAssertFalse(config.allowOpenProxy)
        XCTAssertEqual(config.ioUring, .auto, "io_uring where the kernel allows it")
        assertREADMELimits(config.limits, "embedded default")
        XCTAssertEqual(config.routes, [
            RouteConfig(name: "default", host: .any, upstream: .origin, response: .reportOnlyHTTP),
        ], "the embedded route reports rejects without blocking")
        XCTAssertEqual(config.admin, AdminConfig(address: ListenAddress(host: "127.0.0.1", port: 9090)))
        XCTAssertEqual(config.rejects.keep, 1000)
        XCTAssertNoThrow(try config.validate())
    }

    func testOmittedKeysTakeDefaults() throws {
        let config = try XCTUnwrap(assertLoads(defaultRouteYAML))
        // Each default as the README states it, not as the code under test builds it.
        XCTAssertEqual(config.listen.description, "127.0.0.1:8080")
        XCTAssertEqual(config.workers, activeCores)
        XCTAssertFalse(config.allowOpenProxy)
        XCTAssertEqual(config.ioUring, .auto)
        assertREADMELimits(config.limits, "omitted limits")
        XCTAssertEqual(config.admin, AdminConfig(address: ListenAddress(host: "127.0.0.1", port: 9090)))
        XCTAssertEqual(config.rejects.keep, 1000)
        // A route in a file is validated only when it says so.
        XCTAssertEqual(config.routes, [RouteConfig(name: "default", host: .any, upstream: .origin)])
        XCTAssertNil(config.routes.first?.response)
    }

    func testExplicitWorkersAndPartialLimits() throws {
        let config = try XCTUnwrap(assertLoads("""
            listen: "[::1]:0"
            workers: 3
            io_uring: off
            limits:
              header_bytes: 64KiB
              body_bytes: 1GiB
              idle_timeout: 500ms
              upstream_timeout: 2m
              drain_timeout: 1h
              connect_timeout: 7
            """ + "\n" + defaultRouteYAML))
        XCTAssertEqual(config.listen, ListenAddress(host: "::1", port: 0))
        XCTAssertEqual(config.workers, 3)
        XCTAssertEqual(config.ioUring, .off)
        XCTAssertEqual(config.limits.headerBytes, 65536)
        XCTAssertEqual(config.limits.bodyBytes, 1 << 30)
        XCTAssertEqual(config.limits.idleTimeout, .milliseconds(500))
        XCTAssertEqual(config.limits.upstreamTimeout, .seconds(120))
        XCTAssertEqual(config.limits.drainTimeout, .seconds(3600))
        XCTAssertEqual(config.limits.connectTimeout, .seconds(7))
        XCTAssertEqual(config.limits.requestLineBytes, 8192, "unset limits keep their default")
    }

    func testRenderYAMLRoundTripsFullExample() throws {
        let config = try AirlockConfig.load(yaml: fullExampleYAML)
        let rendered = config.renderYAML()
        XCTAssertEqual(try AirlockConfig.load(yaml: rendered), config, rendered)
        XCTAssertTrue(rendered.contains("host: \"*\""), rendered)
        XCTAssertTrue(rendered.contains("upstream_timeout: 60s"), rendered)
    }

    func testRenderYAMLRoundTripsUnusualValues() throws {
        var limits = LimitsConfig()
        limits.idleTimeout = .milliseconds(1500)
        limits.drainTimeout = .seconds(7200)
        limits.upstreamTimeout = .seconds(600)
        limits.maxIdlePerUpstream = 0
        limits.bodyBytes = 5_000_000_000
        let config = AirlockConfig(
            listen: ListenAddress(host: "::1", port: 0),
            workers: 256,
            allowOpenProxy: true,
            limits: limits,
            routes: [
                RouteConfig(name: "v6", host: .exact("[::1]"), pathPrefix: "/a:b,c\"d{}[]",
                            upstream: .fixed(UpstreamTarget(scheme: "https", host: "::1", port: 8443))),
                RouteConfig(name: "true", host: .suffix(".example.com"), pathPrefix: "/",
                            upstream: .fixed(UpstreamTarget(scheme: "https", host: "api.example.com"))),
                RouteConfig(name: "null", host: .any, upstream: .origin),
            ],
            ioUring: .off
        )
        let rendered = config.renderYAML()
        XCTAssertTrue(rendered.contains("io_uring: off"), rendered)
        XCTAssertEqual(try AirlockConfig.load(yaml: rendered), config, rendered)
    }

    func testRenderYAMLRoundTripsEmbeddedDefault() throws {
        let config = AirlockConfig.embeddedDefault
        XCTAssertEqual(try AirlockConfig.load(yaml: config.renderYAML()), config)
    }

    func testMultipleErrorsAreReportedTogether() {
        let issues = loadIssues("""
            listen: nowhere
            workers: 0
            limits:
              idle_timeout: forever
              header_count: 0
            routes:
              - name: a
                match: { host: "*", path_prefix: v1 }
                upstream: gopher://x
              - name: a
                match: { host: "a.example" }
                upstream: origin
                response: { mode: maybe }
            """)
        XCTAssertEqual(Set(issues.map(\.keyPath)), [
            "listen", "workers", "limits.idle_timeout", "limits.header_count",
            "routes[0].match.path_prefix", "routes[0].upstream", "routes[1].name", "routes[1].response.mode",
        ], "\(issues)")
        XCTAssertEqual(issues.count, 8, "\(issues)")
    }

    func testErrorDescriptionIsOneLinePerIssue() {
        let error = ConfigError(issues: [
            ConfigError.Issue(keyPath: "routes[1].upstream", message: "bad"),
            ConfigError.Issue(keyPath: "workers", message: "worse"),
        ])
        XCTAssertEqual(error.description, "routes[1].upstream: bad\nworkers: worse")
    }

    func testLoadFileReadsAndReportsUnreadableFile() throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("airlock-\(UUID().uuidString).yaml").path
        XCTAssertThrowsError(try AirlockConfig.load(file: path)) { error in
            let issues = (error as? ConfigError)?.issues ?? []
            XCTAssertEqual(issues.count, 1)
            XCTAssertTrue(issues.first?.message.contains(path) == true, "\(issues)")
        }
        try fullExampleYAML.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertEqual(try AirlockConfig.load(file: path), try AirlockConfig.load(yaml: fullExampleYAML))
    }

    func testYAMLSyntaxErrorsNameTheLine() {
        let issues = loadIssues("routes:\n  - name: x\n    match: { host: * }\n")
        XCTAssertEqual(issues.count, 1)
        XCTAssertTrue(issues.first?.message.contains("line 3") == true, "\(issues)")
        XCTAssertTrue(issues.first?.message.contains("quoted") == true, "\(issues)")
    }

    func testDuplicateKeysAreRefused() {
        let issues = loadIssues("workers: 2\nworkers: 3\n" + defaultRouteYAML)
        XCTAssertEqual(issues.count, 1)
        XCTAssertTrue(issues.first?.message.contains("duplicate key \"workers\"") == true, "\(issues)")
    }
}
