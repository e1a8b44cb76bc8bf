import AirlockConfig
import CoreMetrics
import AirlockSession
import AirlockWire
import Logging
import Synchronization

/// One fixed upstream's reachability, shared by every worker and the prober: the state
/// machine under a lock, plus an atomic flag the request path reads (one relaxed load per
/// request); only while it is set does a request take the lock, to learn whether it fails fast
/// or is the circuit's trial.
final class UpstreamHealth: Sendable {
    let route: String
    let key: UpstreamKey
    /// `http://host:port` as configured (a bounded label: it comes from the configuration).
    let upstream: String
    let security: RouteSecurity?
    /// `GET /upstreams`' `last_handshake` (https only; `UpstreamHealth+Handshake`).
    let lastHandshake = Mutex<HandshakeRecord?>(nil)
    private let machine: Mutex<Reachability>
    private let down = Atomic<Bool>(false)
    private let logger: Logger
    let metrics: RouteMetrics?

    init(route: RouteConfig, key: UpstreamKey, upstream: String, retryAfterMillis: UInt64, logger: Logger,
         metrics: RouteMetrics?) {
        self.machine = Mutex(Reachability(retryAfter: retryAfterMillis))
        self.route = route.name
        self.key = key
        self.upstream = upstream
        self.security = key.scheme == "https" ? route.security : nil
        self.logger = logger
        self.metrics = metrics
    }

    /// True while the upstream is unreachable: its requests ask `admit` whether they fail fast.
    var isUnreachable: Bool { down.load(ordering: .relaxed) }

    /// Whether a request goes upstream now (`Reachability.admit`): while the circuit is open it
    /// fails fast; after `reachability.retry_after` one request is the trial.
    func admit() -> Reachability.Admission {
        let now = UInt64(RejectRecord.nowUnixMillis())
        return machine.withLock { $0.admit(now: now) }
    }

    var snapshot: Reachability { machine.withLock { $0 } }

    /// Feeds a probe result or a passive signal; a change of state is logged and published.
    /// `attemptAgeMillis`: how long ago the failed attempt began (`Reachability.record`).
    func record(_ signal: Reachability.Signal, attemptAgeMillis: UInt64? = nil) {
        let now = UInt64(RejectRecord.nowUnixMillis())
        let started = attemptAgeMillis.map { now &- min($0, now) }
        let (transition, failsFast) = machine.withLock { m in (m.record(signal, now: now, attemptStarted: started), m.failsFast) }
        down.store(failsFast, ordering: .relaxed)
        guard let t = transition else { return }
        metrics?.reachable.record(t.to == .reachable ? 1 : 0)
        logger.log(level: t.to == .unreachable ? .warning : .info, "upstream.reachability", metadata: [
            "route": .string(route),
            "upstream": .string(upstream),
            "from": .string(t.from.rawValue),
            "to": .string(t.to.rawValue),
            "reason": .string(t.reason),
        ])
    }
}

/// Every route's fixed-upstream health (index = route index; nil for `origin` routes), and the
/// passive state of `origin` routes' hosts, bounded by an LRU.
final class Reachabilities: Sendable {
    let byRoute: [UpstreamHealth?]
    /// The probe interval; nil when probing is off (`reachability.interval: off`).
    let interval: Duration?
    /// `reachability.retry_after`.
    let retryAfter: Duration
    private let origins: OriginHosts

    /// `carryingOver`: the reachabilities of the configuration a reload replaces; a route with the
    /// same name and upstream key keeps its state (and `origin` hosts theirs).
    init(config: AirlockConfig, logger: Logger, metrics: GatewayMetrics, routeMetrics: [RouteMetrics]? = nil,
         carryingOver previous: Reachabilities? = nil) {
        interval = config.reachability.probeInterval
        retryAfter = config.reachability.retryAfter
        let retryAfterMillis = UInt64(Self.millis(config.reachability.retryAfter))
        origins = previous?.origins ?? OriginHosts(capacity: config.reachability.originHosts)
        let kept = Dictionary((previous?.byRoute ?? []).compactMap { $0.map { ("\($0.route) \($0.key)", $0) } },
                              uniquingKeysWith: { a, _ in a })
        let handles = routeMetrics ?? metrics.routes
        byRoute = config.routes.enumerated().map { i, r in
            guard case .fixed(let t) = r.upstream else { return nil }
            let key = UpstreamKey(scheme: t.scheme, host: t.host, port: t.port,
                                  trust: t.scheme == "https" ? r.security.trustIdentity : "")
            if let same = kept["\(r.name) \(key)"] { return same }
            return UpstreamHealth(route: r, key: key, upstream: "\(t.scheme)://\(t.authority)",
                                  retryAfterMillis: retryAfterMillis, logger: logger, metrics: handles[i])
        }
    }

    /// A passive signal about an `origin` route's host ("host:port").
    func recordOrigin(_ host: String, _ signal: Reachability.Signal, attemptAgeMillis: UInt64? = nil) {
        let now = UInt64(RejectRecord.nowUnixMillis())
        let started = attemptAgeMillis.map { now &- min($0, now) }
        origins.lru.withLock { lru in
            _ = lru.update(host, default: { Reachability() }) { $0.record(signal, now: now, attemptStarted: started) }
        }
    }

    var originSnapshot: [(String, Reachability)] { origins.lru.withLock { $0.entries } }

    static func millis(_ d: Duration) -> Int64 {
        let (seconds, atto) = d.components
        return seconds * 1000 + atto / 1_000_000_000_000_000
    }
}

/// `origin` routes' passive state per host, shared by a reloaded configuration's reachabilities.
final class OriginHosts: Sendable {
    let lru: Mutex<BoundedLRU<String, Reachability>>
    init(capacity: Int) { lru = Mutex(BoundedLRU(capacity: capacity)) }
}

extension Reachabilities {
    /// `GET /upstreams`: each configured upstream (per route) with its state, since when
    /// (Unix milliseconds), the error that explains it (`last_error`, null while reachable), the
    /// most recent failure even after a recovery (`last_failure`: error and Unix ms) and its pool
    /// counts; then the `origin` routes' hosts seen lately (passive state only, most recent first).
    func json() -> [UInt8] {
        var e = Out()
        e.append("{\"interval_ms\":")
        e.append(interval.map { String(Self.millis($0)) } ?? "null")
        e.append(",\"retry_after_ms\":\(Self.millis(retryAfter))")
        e.append(",\"upstreams\":[")
        var first = true
        for h in byRoute {
            guard let h else { continue }
            if !first { e.append(",") }
            first = false
            let r = h.snapshot
            var s = "\n{\"route\":"
            JSON.appendString(h.route, to: &s)
            s += ",\"upstream\":"
            JSON.appendString(h.upstream, to: &s)
            s += ",\"state\":\"\(r.state.rawValue)\",\"since\":\(r.since)"
            Self.appendErrors(r, to: &s)
            s += ",\"pool\":{\"idle\":\(h.metrics?.poolIdleCount.load(ordering: .relaxed) ?? 0)"
            s += ",\"active\":\(h.metrics?.poolActiveCount.load(ordering: .relaxed) ?? 0)}"
            h.appendSecurityJSON(to: &s)
            s += "}"
            e.append(s)
        }
        e.append("],\"origin_hosts\":[")
        for (i, (host, r)) in originSnapshot.enumerated() {
            var s = i > 0 ? "," : ""
            s += "\n{\"host\":"
            JSON.appendString(host, to: &s)
            s += ",\"state\":\"\(r.state.rawValue)\",\"since\":\(r.since)"
            Self.appendErrors(r, to: &s)
            s += "}"
            e.append(s)
        }
        e.append("]}\n")
        return Array(e.text.utf8)
    }

    /// `"last_error"` (what explains the state now: null while reachable) and `"last_failure"`
    /// (the most recent failure and when, kept after a recovery; null if none).
    private static func appendErrors(_ r: Reachability, to s: inout String) {
        s += ",\"last_error\":"
        if let le = r.currentError { JSON.appendString(le, to: &s) } else { s += "null" }
        s += ",\"last_failure\":"
        if let le = r.lastError, let at = r.lastErrorAt {
            s += "{\"error\":"
            JSON.appendString(le, to: &s)
            s += ",\"at\":\(at)}"
        } else {
            s += "null"
        }
    }

    private struct Out {
        var text = ""
        mutating func append(_ s: String) { text += s }
    }
}
