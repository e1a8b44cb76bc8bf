import XCTest
@testable import Airlock

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
