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
        self.config = config
        self.logger = logger
        self.mainLoop = EventLoop(name: "acceptor")
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

    private func accepted(_ fd: Int32, _ peer: SocketAddress) {
        if openConnections.load(ordering: .relaxed) >= config.limits.maxConnections {
            close(fd)
            logger.warning("connection.refused", metadata: [
                "client": .string(peer.description), "reason": "max-connections"])
            return
        }
        openConnections.add(1, ordering: .relaxed)
        let w = workers[nextWorker]
        nextWorker = (nextWorker + 1) % workers.count
        let fdBox = fd
        w.loop.execute { w.adopt(fd: fdBox, peer: peer) }
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
