import Yams

/// `reachability:` (top level): how often each configured upstream is probed.
public struct ReachabilityConfig: Sendable, Equatable {
    /// `reachability.interval`: an active probe of every fixed upstream this often; a stopped
    /// upstream is marked unreachable (its requests fail fast with 503) within one interval.
    public var interval: Duration = .seconds(5)
    /// `reachability.origin_hosts`: passive state kept for at most this many `origin`-route
    /// hosts (least recently used forgotten first).
    public var originHosts: Int = 1024

    public static let intervalRange: ClosedRange<Duration> = .milliseconds(100) ... .seconds(3600)
    public static let originHostsRange = 1...100_000

    public init() {}
}

extension ConfigReader {
    static let reachabilityKeys = ["interval", "origin_hosts"]

    /// `reachability: { interval: 5s, origin_hosts: 1024 }`; ranges are checked in validation.
    mutating func readReachability(_ fields: [String: Node], into config: inout AirlockConfig) {
        guard let node = fields["reachability"],
              let sub = mapping(node, at: "reachability", allowed: Self.reachabilityKeys) else { return }
        if let n = sub["interval"], let text = scalar(n, at: "reachability.interval") {
            if let d = ConfigSyntax.parseDuration(text) {
                config.reachability.interval = d
            } else {
                fail("reachability.interval", "expected a duration such as 1s, 5s or 1m, got \"\(text)\"")
            }
        }
        if let n = sub["origin_hosts"], let text = scalar(n, at: "reachability.origin_hosts") {
            if let count = ConfigSyntax.parseCount(text) {
                config.reachability.originHosts = count
            } else {
                fail("reachability.origin_hosts", "expected a positive integer, got \"\(text)\"")
            }
        }
    }
}

extension AirlockConfig {
    func reachabilityValidationIssues(skipping failed: Set<String>) -> [ConfigError.Issue] {
        var issues: [ConfigError.Issue] = []
        if !failed.contains("reachability.interval"), !ReachabilityConfig.intervalRange.contains(reachability.interval) {
            issues.append(ConfigError.Issue(keyPath: "reachability.interval", message:
                "must be 100ms...1h, got \(ConfigSyntax.formatDuration(reachability.interval))"))
        }
        if !failed.contains("reachability.origin_hosts"), !ReachabilityConfig.originHostsRange.contains(reachability.originHosts) {
            issues.append(ConfigError.Issue(keyPath: "reachability.origin_hosts", message:
                "must be 1...\(ReachabilityConfig.originHostsRange.upperBound), got \(reachability.originHosts)"))
        }
        return issues
    }

    func renderReachabilityYAML() -> [String] {
        ["reachability:",
         "  interval: \(ConfigSyntax.formatDuration(reachability.interval))",
         "  origin_hosts: \(reachability.originHosts)"]
    }
}
