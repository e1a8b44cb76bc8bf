import AirlockConfig
import AirlockSession
import CoreMetrics
import Prometheus
import Synchronization

/// The gateway's metrics, exposed as Prometheus text by `GET /metrics` on the admin listener.
/// Recorded through swift-metrics handles backed by one swift-prometheus registry (this
/// process's own, never the global `MetricsSystem`). Every handle a request touches is resolved
/// once per route when the gateway starts (`RouteMetrics`), never looked up by label strings per
/// request; an update is an atomic add (counters, gauges) or a short lock (histograms). Labels
/// are bounded values only: route names from the configuration, status classes, reason codes.
final class GatewayMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory
    /// Exchanges in flight (AFNetworking's activity indicator): incremented when a request is
    /// routed, decremented when its exchange is logged.
    let inFlight: Meter
    /// CONNECT tunnels open (connecting or relaying).
    let tunnelsOpen: Meter
    /// Requests answered before any route matched (bad head, no route, loop): route "-",
    /// by status class.
    let unrouted: StatusClassCounters
    /// Per route, in configuration order (the index of the route in `config.routes`); a reload
    /// replaces the list (`adoptRoutes`), keeping the handles of routes it did not change.
    var routes: [RouteMetrics] { routeList.withLock { $0 } }
    private let routeList: Mutex<[RouteMetrics]>
    /// The log sink whose dropped records are exported (`airlock_log_dropped_records_total`);
    /// nil when the logger is not the JSON handler (tests with their own handlers).
    let logSink: JSONLogSink?
    /// Client connections closed at accept (`airlock_connections_refused_total{reason}`), one
    /// counter per reason.
    private let refusedMaxConnections = Atomic<UInt64>(0)
    /// Body and tunnel bytes moved with `splice(2)` (`airlock_spliced_bytes_total`).
    private let splicedBytes = Atomic<UInt64>(0)

    /// Why a client connection was closed at accept (a bounded label).
    enum ConnectionRefusal: String, CaseIterable, Sendable {
        case maxConnections = "max-connections"   // limits.max_connections (or the descriptor cap)
    }

    init(config: AirlockConfig, logSink: JSONLogSink? = nil) {
        self.logSink = logSink
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
        ]
        self.registry = registry
        self.factory = factory
        inFlight = Meter(label: "airlock_in_flight_requests", dimensions: [], factory: factory)
        tunnelsOpen = Meter(label: "airlock_tunnels_open", dimensions: [], factory: factory)
        unrouted = StatusClassCounters(route: "-", factory: factory)
        routeList = Mutex(config.routes.map { r in
            RouteMetrics(route: r.name, upstream: Self.upstreamLabel(r), factory: factory)
        })
    }

    private static func upstreamLabel(_ r: RouteConfig) -> String {
        switch r.upstream {
        case .fixed(let t): "\(t.scheme)://\(t.authority)"
        case .origin: "origin"
        }
    }

    /// The handles for a reloaded configuration's routes, in its order: a route with the same
    /// name and upstream keeps its handles (its histograms go on counting), others get new ones.
    func adoptRoutes(_ config: AirlockConfig) -> [RouteMetrics] {
        routeList.withLock { list in
            let byKey = Dictionary(list.map { ("\($0.route) \($0.upstream)", $0) }, uniquingKeysWith: { a, _ in a })
            list = config.routes.map { r in
                let upstream = Self.upstreamLabel(r)
                return byKey["\(r.name) \(upstream)"] ?? RouteMetrics(route: r.name, upstream: upstream, factory: factory)
            }
            return list
        }
    }

    /// The Prometheus text exposition of every metric.
    func exposition() -> [UInt8] {
        for r in routes { r.publishPoolCounts() }
        var text = LatencyHistograms.render(routes.map(\.latency))
        if let logSink {
            text += "# HELP airlock_log_dropped_records_total Log records dropped because the log output did not keep up.\n"
            text += "# TYPE airlock_log_dropped_records_total counter\n"
            text += "airlock_log_dropped_records_total \(logSink.droppedRecords)\n"
        }
        text += "# HELP airlock_connections_refused_total Client connections closed at accept without being served.\n"
        text += "# TYPE airlock_connections_refused_total counter\n"
        for reason in ConnectionRefusal.allCases {
            text += "airlock_connections_refused_total{reason=\"\(reason.rawValue)\"} \(connectionsRefused(reason))\n"
        }
        text += "# HELP airlock_spliced_bytes_total Body and tunnel bytes moved socket to socket with splice(2), not copied (limits.splice).\n"
        text += "# TYPE airlock_spliced_bytes_total counter\n"
        text += "airlock_spliced_bytes_total \(spliced)\n"
        return Self.withHelp(registry.emitToBuffer() + Array(text.utf8))
    }

    /// `# HELP` for every family (swift-metrics handles carry no help text, so it is added to
    /// the exposition here): one line, what the family counts and its labels' meaning.
    static let help: [String: String] = [
        "airlock_requests_total": "Requests answered, by route and status class (route \"-\": before any route matched).",
        "airlock_rejects_total": "Upstream responses rejected by the route's response validation, by reason.",
        "airlock_untrusted_upstreams_total": "TLS upstreams refused by the route's security policy (or their handshake), by reason.",
        "airlock_gateway_errors_total": "Errors Airlock answered itself, by route and error code.",
        "airlock_egress_denied_total": "Requests whose target resolved to addresses the route's egress policy denies, by reason.",
        "airlock_request_bytes_total": "Request body bytes received from clients, by route.",
        "airlock_response_bytes_total": "Response body bytes sent to clients, by route.",
        "airlock_tunnels_total": "CONNECT tunnels ended, by route and how they ended.",
        "airlock_tunnel_bytes_total": "Bytes relayed through CONNECT tunnels, by route and direction (up: client to upstream).",
        "airlock_tunnels_open": "CONNECT tunnels open now (connecting or relaying).",
        "airlock_intercepts_total": "Intercepted CONNECTs, by route and result.",
        "airlock_in_flight_requests": "Exchanges in flight now.",
        "airlock_upstream_connections": "Upstream connections now, by route, upstream and state (idle in the pool, or active).",
        "airlock_upstream_reachable": "Fixed upstream reachability: 1 reachable, 0 unreachable, -1 unknown.",
        "airlock_upstream_connect_seconds": "Time to open a TCP connection to an upstream, by route.",
        "airlock_upstream_tls_seconds": "Time of the TLS handshake with an upstream, by route.",
        LatencyHistograms.firstByteName: "Time from a request's head to the first response byte sent to the client, by route.",
        LatencyHistograms.totalName: "Time from a request's head to its last response byte, by route.",
    ]

    /// Adds a `# HELP` line before each `# TYPE` line that has none.
    static func withHelp(_ exposition: [UInt8]) -> [UInt8] {
        var out: [Substring] = []
        var previous: Substring = ""
        for line in String(decoding: exposition, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), !previous.hasPrefix("# HELP ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                if let text = help[String(name)] { out.append(Substring("# HELP \(name) \(text)")) }
            }
            out.append(line)
            previous = line
        }
        return Array(out.joined(separator: "\n").utf8)
    }

    /// Bytes a body or tunnel moved with `splice(2)`.
    func countSpliced(_ n: Int) { splicedBytes.add(UInt64(n), ordering: .relaxed) }

    var spliced: UInt64 { splicedBytes.load(ordering: .relaxed) }

    /// A client connection closed at accept.
    func connectionRefused(_ reason: ConnectionRefusal) {
        switch reason {
        case .maxConnections: refusedMaxConnections.add(1, ordering: .relaxed)
        }
    }

    func connectionsRefused(_ reason: ConnectionRefusal) -> UInt64 {
        switch reason {
        case .maxConnections: refusedMaxConnections.load(ordering: .relaxed)
        }
    }

    /// A rejected response (validation) on `route`, by reason code. Rare: looked up by label.
    func rejected(route: String, reason: String) {
        CoreMetrics.Counter(label: "airlock_rejects_total", dimensions: [("route", route), ("reason", reason)], factory: factory).increment()
    }

    /// `airlock_resumes_total{route,result}`: what became of a download cut mid-body: `resumed`
    /// (the rest continued the client's body), or why not (`ResumeRefusal`'s codes).
    func resume(route: String, result: String) {
        CoreMetrics.Counter(label: "airlock_resumes_total", dimensions: [("route", route), ("result", result)],
                            factory: factory).increment()
    }

    /// A request or tunnel the route's egress policy refused, by reason. Rare.
    func egressDenied(route: String, reason: String) {
        CoreMetrics.Counter(label: "airlock_egress_denied_total", dimensions: [("route", route), ("reason", reason)],
                            factory: factory).increment()
    }

    /// An upstream refused by the route's security policy, by trust-failure reason. Rare.
    func untrusted(route: String, reason: String) {
        CoreMetrics.Counter(label: "airlock_untrusted_upstreams_total", dimensions: [("route", route), ("reason", reason)],
                factory: factory).increment()
    }

    /// A CONNECT tunnel ended: `airlock_tunnels_total{route, end}` and its bytes each way on
    /// `airlock_tunnel_bytes_total{route, direction}` (handles resolved once per route; a bare
    /// route in a test has none, and its tunnel is looked up by label).
    func tunnelEnded(route: RouteMetrics?, name: String, end: TunnelEnd, bytesUp: UInt64, bytesDown: UInt64) {
        guard let route else {
            CoreMetrics.Counter(label: "airlock_tunnels_total", dimensions: [("route", name), ("end", end.rawValue)],
                                factory: factory).increment()
            return
        }
        route.tunnelsEnded[end]?.increment()
        if bytesUp > 0 { route.tunnelBytesUp.increment(by: Int64(clamping: bytesUp)) }
        if bytesDown > 0 { route.tunnelBytesDown.increment(by: Int64(clamping: bytesDown)) }
    }

    /// An intercepted CONNECT's TLS handshake ended: `airlock_intercepts_total{route, result}`
    /// (`intercepted` or `tls-failed`; looked up by label, once per CONNECT).
    func interceptEnded(route: String, result: String) {
        CoreMetrics.Counter(label: "airlock_intercepts_total", dimensions: [("route", route), ("result", result)],
                            factory: factory).increment()
    }

    /// A request the gateway answered with an error of its own, by error code. Rare.
    func gatewayError(route: String, error: String) {
        CoreMetrics.Counter(label: "airlock_gateway_errors_total", dimensions: [("route", route), ("error", error)],
                factory: factory).increment()
    }
}

/// The handles one route's exchanges update, resolved once.
final class RouteMetrics: Sendable {
    let route: String
    /// The upstream label ("origin" or the fixed URL's scheme and authority).
    let upstream: String
    private let requests: StatusClassCounters
    let bytesIn: CoreMetrics.Counter
    let bytesOut: CoreMetrics.Counter
    /// CONNECT tunnel payload, client → upstream ("up") and upstream → client ("down").
    let tunnelBytesUp: CoreMetrics.Counter
    let tunnelBytesDown: CoreMetrics.Counter
    /// `airlock_tunnels_total{route, end}`, one per `TunnelEnd`.
    let tunnelsEnded: [TunnelEnd: CoreMetrics.Counter]
    /// Time to a connected upstream (resolve + TCP connect), new connections only.
    let connect: CoreMetrics.Timer
    /// The TLS handshake and trust evaluation, new https connections only.
    let tls: CoreMetrics.Timer
    /// Request start to the response head from the upstream, and to the exchange's end.
    let latency: LatencyHistograms
    /// Upstream connections of this route, idle in a pool and serving an exchange: counted
    /// with atomics by workers, copied into the gauges at scrape time.
    let poolIdleCount = Atomic<Int>(0)
    let poolActiveCount = Atomic<Int>(0)
    private let poolIdle: CoreMetrics.Gauge
    private let poolActive: CoreMetrics.Gauge
    /// 1 reachable, 0 unreachable, -1 unknown (fixed upstreams only).
    let reachable: CoreMetrics.Gauge

    init(route: String, upstream: String, factory: PrometheusMetricsFactory) {
        self.upstream = upstream
        self.route = route
        requests = StatusClassCounters(route: route, factory: factory)
        bytesIn = CoreMetrics.Counter(label: "airlock_request_bytes_total", dimensions: [("route", route)], factory: factory)
        bytesOut = CoreMetrics.Counter(label: "airlock_response_bytes_total", dimensions: [("route", route)], factory: factory)
        tunnelBytesUp = CoreMetrics.Counter(label: "airlock_tunnel_bytes_total", dimensions: [("route", route), ("direction", "up")],
                                            factory: factory)
        tunnelBytesDown = CoreMetrics.Counter(label: "airlock_tunnel_bytes_total", dimensions: [("route", route), ("direction", "down")],
                                              factory: factory)
        tunnelsEnded = Dictionary(uniqueKeysWithValues: TunnelEnd.allCases.map { end in
            (end, CoreMetrics.Counter(label: "airlock_tunnels_total", dimensions: [("route", route), ("end", end.rawValue)],
                                      factory: factory))
        })
        connect = CoreMetrics.Timer(label: "airlock_upstream_connect_seconds", dimensions: [("route", route)], factory: factory)
        tls = CoreMetrics.Timer(label: "airlock_upstream_tls_seconds", dimensions: [("route", route)], factory: factory)
        latency = LatencyHistograms(route: route)
        poolIdle = CoreMetrics.Gauge(label: "airlock_upstream_connections", dimensions: [("route", route), ("upstream", upstream), ("state", "idle")],
                         factory: factory)
        poolActive = CoreMetrics.Gauge(label: "airlock_upstream_connections", dimensions: [("route", route), ("upstream", upstream), ("state", "active")],
                           factory: factory)
        reachable = CoreMetrics.Gauge(label: "airlock_upstream_reachable", dimensions: [("route", route), ("upstream", upstream)], factory: factory)
        reachable.record(-1)
    }

    /// Copies the pool counts into their gauges (at scrape time).
    func publishPoolCounts() {
        poolIdle.record(poolIdleCount.load(ordering: .relaxed))
        poolActive.record(poolActiveCount.load(ordering: .relaxed))
    }

    /// One finished exchange (or a request answered before routing, with zero durations).
    @inline(__always)
    func requestFinished(status: Int, bytesIn: UInt64, bytesOut: UInt64) {
        requests.count(status)
        if bytesIn > 0 { self.bytesIn.increment(by: Int64(clamping: bytesIn)) }
        if bytesOut > 0 { self.bytesOut.increment(by: Int64(clamping: bytesOut)) }
    }
}

/// `airlock_requests_total{route, status_class}` for 1xx … 5xx.
struct StatusClassCounters: Sendable {
    private let counters: [CoreMetrics.Counter]

    init(route: String, factory: PrometheusMetricsFactory) {
        counters = (1...5).map { c in
            CoreMetrics.Counter(label: "airlock_requests_total", dimensions: [("route", route), ("status_class", "\(c)xx")],
                                factory: factory)
        }
    }

    @inline(__always)
    func count(_ status: Int) {
        let c = status / 100
        if c >= 1 && c <= 5 { counters[c - 1].increment() }
    }
}
