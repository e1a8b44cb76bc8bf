import AirlockYAML

/// `reachability:` (top level): whether fixed upstreams are probed, and how long a route whose
/// upstream is unreachable fails fast before one request tries it again.
public struct ReachabilityConfig: Sendable, Equatable {
    /// Whether fixed upstreams are probed: `reachability.interval: off` (the default) or a
    /// duration (`on`, every `interval`).
    public enum Probing: String, Sendable, Equatable {
        case off   // only requests' own connections judge an upstream
        case on    // and a probe every `interval`
    }

    /// `reachability.interval`: `off`, or an active probe of every fixed upstream this often
    /// (a stopped upstream is then marked unreachable within one interval, with no request).
    public var probing: Probing = .off
    /// The probe period when `probing` is on (setting `interval` turns it on); the default of
    /// `retryAfter`.
    public var interval: Duration = .seconds(5)
    /// `reachability.retry_after`: an unreachable upstream's requests fail fast (503 with
    /// `Retry-After`) this long, then one request is let through as a trial. Defaults to
    /// `interval`.
    public var retryAfter: Duration = .seconds(5)
    /// `reachability.origin_hosts`: passive state kept for at most this many `origin`-route
    /// hosts (least recently used forgotten first).
    public var originHosts: Int = 1024

    public static let intervalRange: ClosedRange<Duration> = .milliseconds(100) ... .seconds(3600)
    public static let originHostsRange = 1...100_000

    public init() {}

    /// Seconds for a `Retry-After` field: `retryAfter` rounded up, at least 1.
    public var retryAfterSeconds: Int {
        let (s, atto) = retryAfter.components
        return max(1, Int(s) + (atto > 0 ? 1 : 0))
    }

    /// The probe interval, nil when probing is off.
    public var probeInterval: Duration? { probing == .on ? interval : nil }
}

extension ConfigReader {
    static let reachabilityKeys = ["interval", "retry_after", "origin_hosts"]

    /// `reachability: { interval: off, retry_after: 5s, origin_hosts: 1024 }`; ranges are
    /// checked in validation.
    mutating func readReachability(_ fields: [String: Node], into config: inout AirlockConfig) {
        guard let node = fields["reachability"],
              let sub = mapping(node, at: "reachability", allowed: Self.reachabilityKeys) else { return }
        if let n = sub["interval"], let text = scalar(n, at: "reachability.interval") {
            if text == "off" {
                config.reachability.probing = .off
            } else if let d = ConfigSyntax.parseDuration(text) {
                config.reachability.probing = .on
                config.reachability.interval = d
            } else {
                fail("reachability.interval", "expected off or a duration such as 1s, 5s or 1m, got \"\(text)\"")
            }
        }
        config.reachability.retryAfter = config.reachability.interval
        if let n = sub["retry_after"], let text = scalar(n, at: "reachability.retry_after") {
            if let d = ConfigSyntax.parseDuration(text) {
                config.reachability.retryAfter = d
            } else {
                fail("reachability.retry_after", "expected a duration such as 1s, 5s or 1m, got \"\(text)\"")
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
        // (A retry_after that is the interval's default is judged as the interval.)
        if !failed.contains("reachability.retry_after"), reachability.retryAfter != reachability.interval,
           !ReachabilityConfig.intervalRange.contains(reachability.retryAfter) {
            issues.append(ConfigError.Issue(keyPath: "reachability.retry_after", message:
                "must be 100ms...1h, got \(ConfigSyntax.formatDuration(reachability.retryAfter))"))
        }
        if !failed.contains("reachability.origin_hosts"), !ReachabilityConfig.originHostsRange.contains(reachability.originHosts) {
            issues.append(ConfigError.Issue(keyPath: "reachability.origin_hosts", message:
                "must be 1...\(ReachabilityConfig.originHostsRange.upperBound), got \(reachability.originHosts)"))
        }
        return issues
    }

    func renderReachabilityYAML() -> [String] {
        ["reachability:",
         "  interval: \(reachability.probing == .on ? ConfigSyntax.formatDuration(reachability.interval) : "off")",
         "  retry_after: \(ConfigSyntax.formatDuration(reachability.retryAfter))",
         "  origin_hosts: \(reachability.originHosts)"]
    }
}
