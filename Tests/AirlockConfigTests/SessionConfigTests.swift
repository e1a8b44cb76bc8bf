import XCTest
@testable import AirlockConfig

/// `reachability:` and the per-upstream cap keys: read, defaulted, range-checked at load with
/// the key path in the message, and rendered so that a reload gives the same config.
final class SessionConfigTests: XCTestCase {
    func testDefaults() throws {
        let c = try AirlockConfig.load(yaml: defaultRouteYAML)
        XCTAssertEqual(c.reachability.interval, .seconds(5))
        XCTAssertEqual(c.reachability.originHosts, 1024)
        XCTAssertEqual(c.limits.maxConnectionsPerUpstream, 0, "unlimited unless configured")
        XCTAssertEqual(c.limits.upstreamQueue, 256)
        XCTAssertEqual(c.limits.upstreamQueueTimeout, .seconds(5))
    }

    func testReadAndRoundTrip() throws {
        let c = try AirlockConfig.load(yaml: """
            workers: 2
            reachability: { interval: 1500ms, origin_hosts: 64 }
            limits: { max_connections_per_upstream: 10, upstream_queue: 40, upstream_queue_timeout: 3s }
            """ + "\n" + defaultRouteYAML)
        XCTAssertEqual(c.reachability.interval, .milliseconds(1500))
        XCTAssertEqual(c.reachability.originHosts, 64)
        XCTAssertEqual(c.limits.maxConnectionsPerUpstream, 10)
        XCTAssertEqual(c.limits.upstreamQueue, 40)
        XCTAssertEqual(c.limits.upstreamQueueTimeout, .seconds(3))
        XCTAssertEqual(try AirlockConfig.load(yaml: c.renderYAML()), c)
    }

    /// Issue #18 (2.4): no active probes unless asked; an interval turns them on and is the
    /// default `retry_after`; `retry_after` alone keeps them off.
    func testProbingIsOptInAndRetryAfterDefaultsToTheInterval() throws {
        let d = try AirlockConfig.load(yaml: defaultRouteYAML)
        XCTAssertEqual(d.reachability.probing, .off)
        XCTAssertNil(d.reachability.probeInterval)
        XCTAssertEqual(d.reachability.retryAfter, .seconds(5))
        XCTAssertEqual(d.reachability.retryAfterSeconds, 5)
        XCTAssertTrue(d.renderYAML().contains("  interval: off\n  retry_after: 5s\n"), d.renderYAML())
        XCTAssertEqual(try AirlockConfig.load(yaml: d.renderYAML()), d)

        let on = try AirlockConfig.load(yaml: "reachability: { interval: 2s }\n" + defaultRouteYAML)
        XCTAssertEqual(on.reachability.probing, .on)
        XCTAssertEqual(on.reachability.probeInterval, .seconds(2))
        XCTAssertEqual(on.reachability.retryAfter, .seconds(2))
        XCTAssertEqual(try AirlockConfig.load(yaml: on.renderYAML()), on)

        let off = try AirlockConfig.load(yaml: "reachability: { interval: off, retry_after: 1500ms }\n" + defaultRouteYAML)
        XCTAssertEqual(off.reachability.probing, .off)
        XCTAssertEqual(off.reachability.retryAfter, .milliseconds(1500))
        XCTAssertEqual(off.reachability.retryAfterSeconds, 2, "Retry-After is whole seconds, rounded up")
        XCTAssertEqual(try AirlockConfig.load(yaml: off.renderYAML()), off)

        assertSingleIssue("reachability: { retry_after: 50ms }\n" + defaultRouteYAML, at: "reachability.retry_after", contains: "100ms")
        assertSingleIssue("reachability: { retry_after: later }\n" + defaultRouteYAML, at: "reachability.retry_after", contains: "duration")
        assertSingleIssue("reachability: { interval: sometimes }\n" + defaultRouteYAML, at: "reachability.interval", contains: "off")
    }

    func testBadValuesNameTheirKey() {
        assertSingleIssue("reachability: { interval: 10ms }\n" + defaultRouteYAML, at: "reachability.interval", contains: "100ms")
        assertSingleIssue("reachability: { interval: soon }\n" + defaultRouteYAML, at: "reachability.interval", contains: "duration")
        assertSingleIssue("reachability: { origin_hosts: 0 }\n" + defaultRouteYAML, at: "reachability.origin_hosts")
        assertSingleIssue("reachability: { every: 1s }\n" + defaultRouteYAML, at: "reachability.every")
        assertSingleIssue("workers: 4\nlimits: { max_connections_per_upstream: 3 }\n" + defaultRouteYAML,
                          at: "limits.max_connections_per_upstream", contains: "at least workers (4)")
        assertSingleIssue("limits: { upstream_queue: 1000001 }\n" + defaultRouteYAML, at: "limits.upstream_queue")
        assertSingleIssue("limits: { upstream_queue_timeout: 0s }\n" + defaultRouteYAML, at: "limits.upstream_queue_timeout")
    }
}
