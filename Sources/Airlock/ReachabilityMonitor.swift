import AirlockConfig
import AirlockIO
import AirlockSecurity
import AirlockSession

/// Probes every fixed upstream each `reachability.interval` (when it is not `off`, the default)
/// on the acceptor loop, never blocking it: a non-blocking resolve, a non-blocking TCP connect
/// and, for https upstreams, the TLS handshake and the route's security policy, exactly as a
/// request's connection would be judged. At most one probe per upstream is in flight; each is
/// bounded by the interval (and `limits.connect_timeout`).
final class ReachabilityMonitor {
    private let loop: EventLoop
    /// Replaced by a reload (on this loop): the routes' reachabilities to probe.
    var context: GatewayContext
    private let resolver: Resolver
    private var timer: Timer?
    private var probes: [ObjectIdentifier: Probe] = [:]
    private var busy: Set<Int> = []

    init(loop: EventLoop, context: GatewayContext) {
        self.loop = loop
        self.context = context
        self.resolver = Resolver(loop: loop)
    }

    /// Probes every interval (on the loop), the first one interval after the start: until
    /// then an upstream is `unknown` (never failed fast) or judged by its first requests.
    func start() {
        guard let interval = context.reachability.interval,
              context.reachability.byRoute.contains(where: { $0 != nil }) else { return }
        let t = Timer(loop: loop) { [unowned self] in self.tick(interval) }
        timer = t
        t.schedule(after: interval)
    }

    func stop() {
        timer?.cancel()
        timer = nil
        for p in probes.values { p.stream?.close() }
        probes = [:]
    }

    private func tick(_ interval: Duration) {
        for (i, h) in context.reachability.byRoute.enumerated() {
            guard let h, !busy.contains(i) else { continue }
            busy.insert(i)
            probe(i, h)
        }
        timer?.schedule(after: interval)
    }

    /// Resolves and dials the upstream's first address with the shared connector (no egress
    /// filter: the operator configured this upstream).
    private func probe(_ index: Int, _ h: UpstreamHealth) {
        UpstreamConnector.resolve(resolver, host: h.key.host, port: h.key.port, filter: nil) { [weak self] result in
            guard let self, self.timer != nil else { return }
            switch result {
            case .failure(.unresolvable(let detail)):
                self.finish(index, h, .probeFailed("cannot resolve \(h.key.host): \(detail)"))
            case .failure(.refused(let e)):   // no filter here: kept for completeness
                self.finish(index, h, .probeFailed(e.message))
            case .success(let addresses):
                self.connect(index, h, addresses)
            }
        }
    }

    private func connect(_ index: Int, _ h: UpstreamHealth, _ addresses: [SocketAddress]) {
        let timeout = min(context.reachability.interval ?? .seconds(5), context.config.limits.connectTimeout)
        let p = Probe(health: h, index: index, monitor: self)
        var connector = UpstreamConnector()
        connector.start(addresses)
        let dial = connector.dialNext(isSelf: { _ in false }, freeDescriptor: { false }) { address in
            var tls: TLSSetup?
            if let security = h.security {
                tls = TLSSetup(context: try context.tls.context(for: security), serverName: h.key.host, session: nil) { _ in }
            }
            p.stream = try Stream(loop: loop, connectingTo: address, timeout: timeout, tls: tls)
        }
        switch dial {
        case .dialling, .ownListener:
            p.stream?.delegate = p
            probes[ObjectIdentifier(p)] = p
        case .failed(nil):
            finish(index, h, .probeFailed("no address for \(h.key.host)"))
        case .failed(let error?):
            finish(index, h, .probeFailed(error))
        }
    }

    fileprivate func finished(_ p: Probe, _ signal: Reachability.Signal) {
        p.stream?.close()
        p.stream = nil
        probes.removeValue(forKey: ObjectIdentifier(p))
        finish(p.index, p.health, signal)
    }

    private func finish(_ index: Int, _ h: UpstreamHealth, _ signal: Reachability.Signal) {
        busy.remove(index)
        h.record(signal)
    }
}

/// One probe's connection: connected (and trusted) or not, then closed.
private final class Probe: StreamDelegate {
    let health: UpstreamHealth
    let index: Int
    unowned let monitor: ReachabilityMonitor
    var stream: Stream?

    init(health: UpstreamHealth, index: Int, monitor: ReachabilityMonitor) {
        self.health = health
        self.index = index
        self.monitor = monitor
    }

    func streamReadable(_ s: Stream) {}
    func streamWritable(_ s: Stream) {}

    func stream(_ s: Stream, event: StreamEvent) {
        switch event {
        case .connected:
            if let security = health.security,
               case .rejected(let failure) = UpstreamConnection.evaluate(s, host: health.key.host, security: security) {
                monitor.finished(self, .probeUntrusted(failure.reason.rawValue))
            } else {
                monitor.finished(self, .probeSucceeded)
            }
        case .error(let why): monitor.finished(self, .probeFailed(why))
        case .tlsFailed(let why): monitor.finished(self, .probeFailed("TLS handshake failed: \(why)"))
        case .readTimeout, .writeTimeout: monitor.finished(self, .probeFailed("connect timed out"))
        case .eof: monitor.finished(self, .probeFailed("closed during connect"))
        }
    }
}
