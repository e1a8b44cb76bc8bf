import AirlockIO
import Glibc
import Logging
import Synchronization

/// The gateway process: one acceptor loop (listener and signals) and one worker loop per
/// core. Accepted sockets are handed round-robin to workers and never change threads.
public final class Gateway: @unchecked Sendable {
    public let config: AirlockConfig
    let logger: Logger
    let mainLoop: EventLoop
    private var listener: Listener?
    private var workers: [Worker] = []
    private var signals: SignalWatcher?
    private var drainTimer: Timer?
    private var nextWorker = 0
    private var started = false
    private let openConnections = Atomic<Int>(0)
    private let idleWorkers = Mutex<Set<Int>>([])
    private let state = Mutex<RunState>(.created)
    /// The admin listener (`GET /rejects`), on the acceptor loop; nil when off or unavailable.
    var admin: AdminServer?
    /// Why the default admin address could not be bound (logged at start).
    var adminUnavailable: String?

    private enum RunState {
        case created     // → .running
        case running     // → .draining
        case draining    // → .stopped
        case stopped     // final
    }

    /// Binds the listener (so the port is known and a bind failure is reported at once).
    public init(config: AirlockConfig, logger: Logger) throws {
        IORuntime.setUp()
        Self.routeLibeventLogs(to: logger)
        self.config = config
        self.logger = logger
        self.mainLoop = EventLoop(name: "acceptor")
        Self.raiseDescriptorLimit(for: config.limits, logger: logger)
        let l = try Listener(loop: mainLoop, host: config.listen.host, port: config.listen.port)
        let rejects = RejectLog(capacity: config.rejects.keep)
        let context = GatewayContext(config: config, logger: logger,
                                     viaToken: "airlock-\(Self.randomHex(6))",
                                     listenAddress: l.address, idPrefix: Self.randomHex(8), rejects: rejects)
        try startAdmin(rejects: rejects)
        for i in 0..<max(1, config.workers) {
            workers.append(Worker(index: i, context: context,
                                  onConnectionClosed: { [unowned self] in self.connectionClosed() },
                                  onIdle: { [unowned self] i in self.workerIdle(i) }))
        }
        listener = l
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

    /// Each client connection may need a second descriptor for its upstream: raise the soft
    /// RLIMIT_NOFILE towards twice `max_connections` (plus a reserve), as HAProxy does for
    /// its maxconn, and say so when the hard limit does not allow it.
    static func raiseDescriptorLimit(for limits: LimitsConfig, logger: Logger) {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return }
        let wanted = rlim_t(limits.maxConnections) * 2 + 256
        if rl.rlim_cur < wanted && rl.rlim_cur < rl.rlim_max {
            var raised = rl
            raised.rlim_cur = min(wanted, rl.rlim_max)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { rl = raised }
        }
        if rl.rlim_cur < wanted {
            logger.warning("airlock.fd-limit", metadata: [
                "key": "limits.max_connections",
                "max_connections": .stringConvertible(limits.maxConnections),
                "nofile": .stringConvertible(rl.rlim_cur),
                "message": .string("the descriptor limit (\(rl.rlim_cur)) is below the \(wanted) that limits.max_connections \(limits.maxConnections) may need (a client and an upstream socket each): raise `ulimit -n` (docker run --ulimit nofile=N) or lower limits.max_connections; when descriptors run out, accepting pauses for \(Listener.acceptRetryDelay) at a time"),
            ])
        }
    }

    /// The bound port (the real one when the configuration said 0).
    public var boundPort: UInt16 { listener?.address.port ?? 0 }

    /// Starts the worker threads. Idempotent.
    public func start() throws {
        guard !started else { return }
        started = true
        state.withLock { $0 = .running }
        for w in workers { w.loop.startThread() }
        logAdmin()
        logger.info("airlock.listening", metadata: [
            "address": .string(listener?.address.host ?? "-"),
            "port": .stringConvertible(Int(boundPort)),
            "workers": .stringConvertible(workers.count),
            "routes": .stringConvertible(config.routes.count),
            "send_batching": .string(workers.first?.loop.sendBatching ?? "-"),
        ])
    }

    /// Starts if needed and runs the acceptor loop until SIGTERM/SIGINT (or `shutdown()`)
    /// and the drain that follows. Returns when every worker has stopped.
    public func run() throws {
        try start()
        signals = SignalWatcher(loop: mainLoop, signals: [SIGTERM, SIGINT]) { [unowned self] sig in
            self.logger.info("airlock.signal", metadata: ["signal": .stringConvertible(Int(sig))])
            self.beginShutdown()
        }
        mainLoop.run()
        for w in workers { w.loop.join() }
        signals = nil
        logger.info("airlock.stopped", metadata: [:])
    }

    /// Begins a graceful shutdown from any thread.
    public func shutdown() {
        mainLoop.execute { [self] in self.beginShutdown() }
    }

    // MARK: acceptor loop

    /// Refusals and accept failures are logged at most once a second each, with a count of
    /// those not logged: a flood of connection attempts must not become a flood of log lines.
    private var refusalLog = LogThrottle()
    private var acceptErrorLog = LogThrottle()

    private func accepted(_ fd: Int32, _ peer: SocketAddress) {
        if openConnections.load(ordering: .relaxed) >= config.limits.maxConnections {
            close(fd)
            if let refused = refusalLog.occurred() {
                logger.warning("connection.refused", metadata: [
                    "client": .string(peer.description), "reason": "max-connections",
                    "key": "limits.max_connections",
                    "max_connections": .stringConvertible(config.limits.maxConnections),
                    "refused": .stringConvertible(refused)])
            }
            return
        }
        openConnections.add(1, ordering: .relaxed)
        let w = workers[nextWorker]
        nextWorker = (nextWorker + 1) % workers.count
        let fdBox = fd
        w.loop.execute { w.adopt(fd: fdBox, peer: peer) }
    }

    private func acceptFailed(_ err: Int32) {
        guard let failures = acceptErrorLog.occurred() else { return }
        logger.warning("listener.paused", metadata: [
            "error": .string(String(cString: strerror(err))),
            "errno": .stringConvertible(Int(err)),
            "open_connections": .stringConvertible(openConnections.load(ordering: .relaxed)),
            "failures": .stringConvertible(failures),
            "retry_after": .string("\(Listener.acceptRetryDelay)")])
    }

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
        listener?.close()
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
        admin?.close()
        drainTimer?.cancel()
        drainTimer = nil
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
        guard last == 0 || now - last >= 1_000_000_000 else { return nil }
        last = now
        defer { unlogged = 0 }
        return unlogged
    }
}
