public import AirlockConfig
import AirlockIO
import Glibc
public import Logging
import Synchronization

/// The gateway process: one acceptor loop (listener and signals) and one worker loop per
/// core. Accepted sockets are handed round-robin to workers and never change threads.
public final class Gateway: @unchecked Sendable {
    /// The configuration in force (replaced by a successful reload, on the acceptor loop).
    public internal(set) var config: AirlockConfig
    /// What every worker was last given (`reload` hands them the next one).
    var context: GatewayContext!
    /// Reads the configuration again for a reload (SIGHUP, `POST /reload`): the file the
    /// process started with and the environment, validated and opened as at start. Nil: reload
    /// is not available (the gateway was built in code).
    public var reloadSource: (@Sendable () throws -> OpenedConfig)?
    let logger: Logger
    let mainLoop: EventLoop
    private var listener: Listener?
    private(set) var workers: [Worker] = []
    private var signals: SignalWatcher?
    private var drainTimer: Timer?
    private var nextWorker = 0
    private var started = false
    private let openConnections = Atomic<Int>(0)
    /// The client cap in force: `limits.max_connections`, lowered at start to what the
    /// descriptor limit can hold (each client may need an upstream socket too).
    public private(set) var maxConnections = 0
    private let idleWorkers = Mutex<Set<Int>>([])
    private let state = Mutex<RunState>(.created)
    /// The admin listener (`GET /rejects`), on the acceptor loop; nil when off or unavailable.
    var admin: AdminServer?
    /// Why the default admin address could not be bound (logged at start).
    var adminUnavailable: String?
    /// Probes fixed upstreams on the acceptor loop (`reachability.interval`).
    var monitor: ReachabilityMonitor?
    private let metrics: GatewayMetrics

    private enum RunState {
        case created     // → .running
        case running     // → .draining
        case draining    // → .stopped
        case stopped     // final
    }

    /// Binds the listener (so the port is known and a bind failure is reported at once).
    /// `opened`: the configuration with its files opened (`OpenedConfig(opening:)`).
    public init(config opened: OpenedConfig, logger: Logger) throws {
        IORuntime.setUp()
        Self.routeLibeventLogs(to: logger)
        let config = opened.config
        self.config = config
        self.logger = logger
        self.mainLoop = EventLoop(name: "acceptor")
        Self.raiseDescriptorLimit(for: config.limits)
        let l = try Listener(loop: mainLoop, host: config.listen.host, port: config.listen.port)
        let rejects = RejectLog(capacity: config.rejects.keep)
        let metrics = GatewayMetrics(config: config, logSink: (logger.handler as? JSONLogHandler)?.sink)
        self.metrics = metrics
        let reachability = Reachabilities(config: config, logger: logger, metrics: metrics)
        // The admin listener first: its address joins the loop check every worker makes.
        try startAdmin(rejects: rejects, metrics: metrics, reachability: reachability, ca: opened.ca?.authority)
        let context = GatewayContext(config: config, ca: opened.ca, logger: logger,
                                     viaToken: "airlock-\(Self.randomHex(6))",
                                     listenAddress: l.address, adminAddress: admin?.address,
                                     idPrefix: Self.randomHex(8), rejects: rejects,
                                     metrics: metrics, reachability: reachability)
        self.context = context
        monitor = ReachabilityMonitor(loop: mainLoop, context: context)
        admin?.onReload = { [unowned self] in self.reload(trigger: "POST /reload") }
        for i in 0..<max(1, config.workers) {
            workers.append(Worker(index: i, context: context,
                                  onConnectionClosed: { [unowned self] in self.connectionClosed() },
                                  onIdle: { [unowned self] i in self.workerIdle(i) }))
        }
        attachTasks()
        listener = l
        // Measured now that the listener, the admin socket and every worker loop hold theirs.
        maxConnections = Self.connectionCap(for: config.limits, workers: workers.count, logger: logger)
        l.onAccept = { [unowned self] fd, peer in self.accepted(fd, peer) }
        l.onAcceptError = { [unowned self] err in self.acceptFailed(err) }
    }

    /// libevent's own warnings become `libevent` records in the JSON log instead of raw
    /// `[warn] ...` lines on stderr.
    static func routeLibeventLogs(to logger: Logger) {
        IORuntime.routeLibeventLogs { severity, message in
            let level: Logger.Level = severity >= 3 ? .error : severity == 2 ? .warning : .debug
            logger.log(level: level, "libevent", metadata: ["message": .string(message)])
        }
    }

    /// Descriptors kept free besides two per client: resolver sockets (a few per worker),
    /// admin clients, and headroom for whatever else the process opens while running.
    static func descriptorReserve(workers: Int) -> Int { 16 + 4 * workers }

    /// Each client connection may need a second descriptor for its upstream: raise the soft
    /// RLIMIT_NOFILE towards twice `max_connections` plus a reserve, as HAProxy does for
    /// its maxconn, as far as the hard limit allows. `connectionCap` judges the result.
    static func raiseDescriptorLimit(for limits: LimitsConfig) {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return }
        let wanted = rlim_t(limits.maxConnections) * 2 + 256
        if rl.rlim_cur < wanted && rl.rlim_cur < rl.rlim_max {
            var raised = rl
            raised.rlim_cur = min(wanted, rl.rlim_max)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
    }

    /// The client cap the descriptor limit supports: what is left after the descriptors open
    /// now and the reserve, halved (a client and its upstream socket). When that is below
    /// `max_connections` the cap is lowered to it and logged once with both numbers, as a
    /// warning when the config named `max_connections`, quietly (info) for the default, so a
    /// client beyond what the process can serve is refused at accept, never accepted and then
    /// failed for want of an upstream socket.
    static func connectionCap(for limits: LimitsConfig, workers: Int, logger: Logger) -> Int {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return limits.maxConnections }
        let nofile = Int(min(rl.rlim_cur, rlim_t(Int32.max)))
        let open = openDescriptorCount()
        let reserve = descriptorReserve(workers: workers)
        let supported = max(1, (nofile - open - reserve) / 2)
        guard supported < limits.maxConnections else { return limits.maxConnections }
        let explicit = limits.maxConnectionsSetExplicitly
        let metadata: Logger.Metadata = [
            "key": "limits.max_connections",
            "max_connections": .stringConvertible(limits.maxConnections),
            "effective_max_connections": .stringConvertible(supported),
            "nofile": .stringConvertible(nofile),
            "open_descriptors": .stringConvertible(open),
            "reserved": .stringConvertible(reserve),
            "message": .string("the descriptor limit (\(nofile)) holds \(supported) clients, not the \(limits.maxConnections) of limits.max_connections\(explicit ? "" : " (default)") (each needs an upstream socket too; \(open) descriptors are open and \(reserve) reserved): clients beyond \(supported) are refused at accept\(explicit ? "; raise `ulimit -n` (docker run --ulimit nofile=N) or lower limits.max_connections" : "")"),
        ]
        logger.log(level: explicit ? .warning : .info, "airlock.fd-limit", metadata: metadata)
        return supported
    }

    /// Descriptors open in this process (Linux: the entries of /proc/self/fd).
    static func openDescriptorCount() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(dir) }
        var n = 0
        while let e = readdir(dir) {
            if e.pointee.d_name.0 != UInt8(ascii: ".") { n += 1 }
        }
        return max(0, n - 1)   // the directory's own descriptor
    }

    /// The bound port (the real one when the configuration said 0).
    public var boundPort: UInt16 { listener?.address.port ?? 0 }

    /// Starts the worker threads. Idempotent.
    public func start() throws {
        guard !started else { return }
        started = true
        state.withLock { $0 = .running }
        for w in workers { w.loop.startThread() }
        mainLoop.execute { [self] in self.monitor?.start() }
        logAdmin()
        logger.info("airlock.listening", metadata: [
            "address": .string(listener?.address.host ?? "-"),
            "port": .stringConvertible(Int(boundPort)),
            "workers": .stringConvertible(workers.count),
            "routes": .stringConvertible(config.routes.count),
            "max_connections": .stringConvertible(maxConnections),
            "send_batching": .string(workers.first?.loop.sendBatching ?? "-"),
            "allocator": .string(Allocator.description),
        ])
    }

    /// Starts if needed and runs the acceptor loop until SIGTERM/SIGINT (or `shutdown()`)
    /// and the drain that follows. Returns when every worker has stopped.
    public func run() throws {
        try start()
        signals = SignalWatcher(loop: mainLoop, signals: [SIGTERM, SIGINT, SIGHUP]) { [unowned self] sig in
            self.logger.info("airlock.signal", metadata: ["signal": .stringConvertible(Int(sig))])
            if sig == SIGHUP {
                _ = self.reload(trigger: "SIGHUP")
            } else {
                self.beginShutdown()
            }
        }
        mainLoop.run()
        for w in workers { w.loop.join() }
        for w in workers { w.flushLog() }
        // Freeing the watcher gives the signals back their default action: a late SIGTERM (an
        // operator's second, a supervisor's) would kill the process before the records above
        // and the one below reach stdout. Ignored from here on: the drain is done.
        signals = nil
        for sig in [SIGTERM, SIGINT, SIGHUP] { _ = Glibc.signal(sig, SIG_IGN) }
        logger.info("airlock.stopped", metadata: [:])  // written after every queued record
    }

    /// Listening and not draining (`/readyz`).
    var isTakingTraffic: Bool { state.withLock { $0 == .running } }

    /// Begins a graceful shutdown from any thread.
    public func shutdown() {
        mainLoop.execute { [self] in self.beginShutdown() }
    }

    // MARK: acceptor loop

    /// Refusals and accept failures are logged at most once a second each, with a count of
    /// those not logged: a flood of connection attempts must not become a flood of log lines.
    /// Refusals held back are written by `refusalFlush` once their second is over, so every
    /// refusal is in the log within about a second of the burst (not at the next refusal).
    private var refusalLog = LogThrottle()
    private var acceptErrorLog = LogThrottle()
    private var refusalFlush: Timer?
    /// The client of the latest refusal held back (the flushed record names it).
    private var heldRefusalPeer: SocketAddress?

    private func accepted(_ fd: Int32, _ peer: SocketAddress) {
        if openConnections.load(ordering: .relaxed) >= maxConnections {
            close(fd)
            metrics.connectionRefused(.maxConnections)
            if let refused = refusalLog.occurred() {
                logRefusals(refused, peer)
            } else {
                heldRefusalPeer = peer
                let t = refusalFlush ?? Timer(loop: mainLoop) { [unowned self] in self.flushRefusals() }
                refusalFlush = t
                if !t.isScheduled { t.schedule(after: refusalLog.nextDue) }
            }
            return
        }
        openConnections.add(1, ordering: .relaxed)
        let w = workers[nextWorker]
        nextWorker = (nextWorker + 1) % workers.count
        let fdBox = fd
        w.loop.execute { w.adopt(fd: fdBox, peer: peer) }
    }

    private func logRefusals(_ refused: Int, _ peer: SocketAddress) {
        logger.warning("connection.refused", metadata: [
            "client": .string(peer.description), "reason": .string(GatewayMetrics.ConnectionRefusal.maxConnections.rawValue),
            "key": "limits.max_connections",
            "max_connections": .stringConvertible(maxConnections),
            "refused": .stringConvertible(refused)])
    }

    private func flushRefusals() {
        guard let peer = heldRefusalPeer, let refused = refusalLog.flush() else { return }
        heldRefusalPeer = nil
        logRefusals(refused, peer)
    }

    private func acceptFailed(_ err: Int32) {
        if err == EMFILE || err == ENFILE {
            for w in workers { w.loop.execute { w.shedIdleUpstreams(Self.shedPerAcceptFailure) } }
        }
        guard let failures = acceptErrorLog.occurred() else { return }
        logger.warning("listener.paused", metadata: [
            "error": .string(String(cString: strerror(err))),
            "errno": .stringConvertible(Int(err)),
            "open_connections": .stringConvertible(openConnections.load(ordering: .relaxed)),
            "failures": .stringConvertible(failures),
            "retry_after": .string("\(Listener.acceptRetryDelay)")])
    }

    /// Idle pooled connections each worker closes when accepting fails for want of descriptors.
    static let shedPerAcceptFailure = 8

    private func connectionClosed() {
        openConnections.subtract(1, ordering: .relaxed)
    }

    private func beginShutdown() {
        let go = state.withLock { s -> Bool in
            guard s == .running else { return false }
            s = .draining
            return true
        }
        guard go else { return }
        // Connections the kernel completed but we had not accepted yet are taken (and drained
        // like the rest: a request already sent on one is answered) rather than reset.
        listener?.closeAfterAcceptingPending()
        listener = nil
        logger.info("airlock.draining", metadata: ["drain_timeout": .string("\(config.limits.drainTimeout)")])
        let t = Timer(loop: mainLoop) { [unowned self] in self.drainTimedOut() }
        t.schedule(after: config.limits.drainTimeout)
        drainTimer = t
        for w in workers { w.loop.execute { w.beginDrain() } }
    }

    private func workerIdle(_ index: Int) {
        let all = idleWorkers.withLock { s -> Bool in
            s.insert(index)
            return s.count == workers.count
        }
        workers[index].loop.stop()
        if all { mainLoop.execute { [self] in self.finishShutdown() } }
    }

    private func drainTimedOut() {
        logger.warning("airlock.drain-timeout", metadata: [
            "open_connections": .stringConvertible(openConnections.load(ordering: .relaxed))])
        for w in workers {
            w.loop.execute {
                w.forceClose()
                w.loop.stop()
            }
        }
        finishShutdown()
    }

    private func finishShutdown() {
        state.withLock { $0 = .stopped }
        monitor?.stop()
        admin?.close()
        drainTimer?.cancel()
        drainTimer = nil
        refusalFlush?.cancel()
        flushRefusals()   // none held back unwritten
        mainLoop.stop()
    }

    static func randomHex(_ bytes: Int) -> String {
        var out = ""
        for _ in 0..<bytes {
            let b = UInt8.random(in: 0...255)
            out += String(b >> 4, radix: 16) + String(b & 0xF, radix: 16)
        }
        return out
    }
}

/// At most one log record a second for an event that can repeat without bound; each record
/// says how many occurrences it stands for.
struct LogThrottle {
    private var last: UInt64 = 0
    private var unlogged = 0

    /// Counts one occurrence; returns how many the record due now stands for, or nil when
    /// none is due yet.
    mutating func occurred() -> Int? {
        unlogged += 1
        let now = EventLoop.nowNanos()
        guard last == 0 || now - last >= Self.period else { return nil }
        last = now
        defer { unlogged = 0 }
        return unlogged
    }

    /// Occurrences not logged yet, as one record due now (nil when there are none); the next
    /// record is then a period away.
    mutating func flush() -> Int? {
        guard unlogged > 0 else { return nil }
        last = EventLoop.nowNanos()
        defer { unlogged = 0 }
        return unlogged
    }

    /// How long until a record is due.
    var nextDue: Duration {
        let elapsed = EventLoop.nowNanos() &- last
        return .nanoseconds(Int64(elapsed >= Self.period ? 0 : Self.period - elapsed))
    }

    private static let period: UInt64 = 1_000_000_000
}
