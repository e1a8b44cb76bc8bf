import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire
import Logging

/// One event loop and everything bound to it: client connections, the upstream pool,
/// the resolver. Connections never leave their worker.
final class Worker: @unchecked Sendable {  // bound to its loop; reached only via loop.execute
    let index: Int
    let loop: EventLoop
    private(set) var context: GatewayContext
    private(set) var limits: LimitsConfig
    private(set) var wireLimits: WireLimits
    /// The configured routes, compiled once per worker (and again on each reload: an exchange
    /// keeps the `Route` it started with).
    private(set) var routes: [Route]
    let resolver: Resolver
    let pool: ConnectionPool<UpstreamConnection>
    let tlsSessions = TLSSessionCache()
    private var clients: [ObjectIdentifier: ClientConnection] = [:]
    private(set) var draining = false
    private var requestCounter: UInt64 = 0
    /// "X-Request-Id: <prefix>-<worker>-": the fixed part of this worker's id field.
    let idPrefix: HeadWriter.FieldPrefix
    /// Where task lifecycle events go (`GET /events`); set before the loop starts, nil
    /// without an admin listener.
    var taskEvents: TaskEventHub? {
        didSet { phases = GatewayPhases(phaseContext) }
    }
    /// This worker's phases, over its routes, limits and sinks (made again on a reload).
    private(set) var phases: GatewayPhases
    /// Upstream connections open (connecting, serving or parked); those parked are the pool's.
    private(set) var upstreamsOpen = 0
    /// One head is serialized at a time on a loop: its buffer is reused for every head.
    var headWriter = HeadWriter(capacity: 4096)
    /// Header storage of finished exchanges, given to the parser of a later head so that
    /// parsing does not allocate. Bounded in count and in the size of each.
    private var spareHeaders: [HTTPHeaders] = []
    static let spareHeadersMax = 256
    static let spareHeaderBytesMax = 4096
    /// `limits.max_connections_per_upstream` and `upstream_queue`, this worker's share (0 = no cap).
    let connectionShare: Int
    let queueShare: Int
    var admissions: [UpstreamKey: UpstreamAdmission] = [:]
    var queued: [UInt64: QueuedExchange] = [:]
    var nextQueueTicket: UInt64 = 0
    /// The routes' response caches on this worker, by route name (`Worker+Cache`).
    var caches: [String: RouteCache] = [:] { didSet { lastRouteCache = nil } }
    /// The route the last `routeCache` call was for and its cache: an exchange's lookup finds
    /// its route's cache by the route's identity, not by its name (cleared with any change
    /// to `caches`, a reload's among them).
    var lastRouteCache: (route: Route, cache: RouteCache)?
    /// Caches a reload ended, their entries freed a slice per loop turn (`retireCaches`).
    var retiredCaches: [RouteCache] = []
    /// Caches used in this loop iteration, whose counters `publishCacheCounters` adds to the
    /// metrics before the iteration's writes.
    var countedCaches: [RouteCache] = []
    /// Exchanges waiting for a fill, by the fill's `FillID` (as `ResponseCache` collapses them).
    var cacheWaiters: [FillID: [Exchange]] = [:]
    var cacheWakeups: [(Exchange, Bool)] = []
    private var flushing = 0
    private var reportedIdle = false
    private let onIdle: @Sendable (Int) -> Void
    /// Called (on this worker's loop) whenever a connection closes.
    private let onConnectionClosed: @Sendable () -> Void

    init(index: Int, context: GatewayContext, onConnectionClosed: @escaping @Sendable () -> Void,
         onIdle: @escaping @Sendable (Int) -> Void) {
        self.index = index
        self.context = context
        self.limits = context.config.limits
        self.routes = Route.table(context.config, metrics: context.metrics, health: context.reachability)
        self.logsAccess = context.logger.logLevel <= .info
        self.wireLimits = Self.wireLimits(limits)
        self.loop = EventLoop(name: "worker-\(index)", batchSends: context.config.ioUring == .auto)
        self.idPrefix = HeadWriter.FieldPrefix(name: "X-Request-Id", valuePrefix: "\(context.idPrefix)-\(index)-")
        self.resolver = Resolver(loop: loop)
        self.pool = ConnectionPool(maxIdlePerKey: limits.maxIdlePerUpstream)
        self.onConnectionClosed = onConnectionClosed
        self.onIdle = onIdle
        // Records from this worker gather in its buffer, handed to the sink when the loop's
        // iteration ends (one batch, never a write per record).
        if let json = context.logger.handler as? JSONLogHandler {
            let buffer = LogBuffer(sink: json.sink)
            var logger = context.logger
            logger.handler = json.buffered(into: buffer)
            self.logger = logger
            self.logBuffer = buffer
            // Access records skip the handler when it adds nothing to them (same bytes).
            self.accessLog = json.metadata.isEmpty && json.metadataProvider == nil ? buffer : nil
            loop.onIterationEnd = { buffer.flush() }
        } else {
            self.logger = context.logger
            self.logBuffer = nil
            self.accessLog = nil
        }
        let workers = max(1, context.config.workers)
        connectionShare = Self.share(of: limits.maxConnectionsPerUpstream, worker: index, workers: workers)
        queueShare = Self.share(of: limits.upstreamQueue, worker: index, workers: workers)
        phases = GatewayPhases(PhaseContext(routes: routes, bodyBytes: limits.bodyBytes, viaToken: context.viaToken,
                                            via11: context.via11, idPrefix: idPrefix, ownListeners: context.ownListeners, metrics: context.metrics,
                                            rejects: context.rejects, logger: logger, logsAccess: logsAccess,
                                            accessLog: accessLog, taskEvents: nil))
    }

    /// What this worker's phases read, as it is now.
    private var phaseContext: PhaseContext {
        PhaseContext(routes: routes, bodyBytes: limits.bodyBytes, viaToken: context.viaToken, via11: context.via11,
                     idPrefix: idPrefix, ownListeners: context.ownListeners, metrics: context.metrics, rejects: context.rejects,
                     logger: logger, logsAccess: logsAccess, accessLog: accessLog, taskEvents: taskEvents)
    }

    /// Writes into `logBuffer` when the gateway logs JSON lines.
    let logger: Logger
    let logBuffer: LogBuffer?
    /// Where access records are encoded directly (`AccessRecord`); nil: through `logger`.
    let accessLog: LogBuffer?

    /// Hands buffered records to the sink (the loop has stopped: called from the main thread).
    func flushLog() { logBuffer?.flush() }
    /// An upstream connection's timeouts while it serves an exchange (upstream_timeout both
    /// ways) and while it is parked (idle_timeout, reading only), looked up once.
    private(set) lazy var upstreamActiveTimeouts = loop.timeouts(read: limits.upstreamTimeout, write: limits.upstreamTimeout)
    private(set) lazy var upstreamIdleTimeouts = loop.timeouts(read: limits.idleTimeout, write: nil)

    /// The parser's limits from `limits.request_line_bytes`, `header_bytes` and `header_count`.
    static func wireLimits(_ limits: LimitsConfig) -> WireLimits {
        WireLimits(requestLineBytes: limits.requestLineBytes, headerBytes: limits.headerBytes, headerCount: limits.headerCount)
    }

    /// A reload (on this worker's loop): new exchanges take the new routes, limits, trust and
    /// CA; exchanges in flight keep their `Route`. Idle pooled connections stay, except those
    /// whose trust identity is in `staleTrust` (its CA or certificate files changed): they, and
    /// the TLS sessions stored under it, were verified under what no longer holds.
    func reconfigure(_ next: GatewayContext, staleTrust: Set<String>) {
        context = next
        limits = next.config.limits
        wireLimits = Self.wireLimits(limits)
        routes = Route.table(next.config, metrics: next.metrics, health: next.reachability)
        upstreamActiveTimeouts = loop.timeouts(read: limits.upstreamTimeout, write: limits.upstreamTimeout)
        upstreamIdleTimeouts = loop.timeouts(read: limits.idleTimeout, write: nil)
        phases = GatewayPhases(phaseContext)
        retireCaches()   // a route's cache may have changed or gone: entries are refetched
        guard !staleTrust.isEmpty else { return }
        for u in pool.removeAll(where: { staleTrust.contains($0.trust) }) { u.close() }
        // A resumed session skips the certificate check: none from under the old material.
        tlsSessions.removeAll { key in key.split(separator: "|", maxSplits: 1).last.map { staleTrust.contains(String($0)) } ?? false }
    }
    /// Whether access records are written (level info or lower), read once: every exchange
    /// asks, and asking the Logger copies its handler.
    let logsAccess: Bool
    var connectionCount: Int { clients.count }

    /// Storage for the next parsed head: a recycled one, or a new (empty) one.
    func takeSpareHeaders() -> HTTPHeaders { spareHeaders.popLast() ?? HTTPHeaders() }

    /// Keeps a finished head's header storage for a later parse (usually unshared by then).
    func recycle(_ headers: HTTPHeaders) {
        guard spareHeaders.count < Self.spareHeadersMax, headers.retainedBytes <= Self.spareHeaderBytesMax else { return }
        spareHeaders.append(headers)
    }

    // MARK: connections

    /// Takes ownership of an accepted socket (on this worker's loop).
    func adopt(fd: Int32, peer: SocketAddress) {
        let c = ClientConnection(worker: self, fd: fd, peer: peer)
        clients[ObjectIdentifier(c)] = c
        if draining { c.drain() }
    }

    func clientClosed(_ c: ClientConnection) {
        if clients.removeValue(forKey: ObjectIdentifier(c)) != nil {
            onConnectionClosed()
        }
        checkIdle()
    }

    /// A closed connection still sending its last response.
    func flushStarted() { flushing += 1 }

    func flushEnded() {
        flushing -= 1
        checkIdle()
    }

    /// While draining, the worker is done when no connection is open and nothing is still flushing.
    private func checkIdle() {
        if draining && clients.isEmpty && flushing == 0 && !reportedIdle {
            reportedIdle = true
            onIdle(index)
        }
    }

    /// Formatted only when something prints it (an error body, a log record).
    func nextRequestID() -> RequestID {
        requestCounter &+= 1
        return RequestID(prefix: context.idPrefix, worker: index, serial: requestCounter)
    }

    // MARK: upstream pool

    func park(_ u: UpstreamConnection) {
        guard !draining else { u.close(); return }
        u.becomeIdle(timeouts: upstreamIdleTimeouts)
        if let evicted = pool.checkin(u, key: u.key) { evicted.close() }
        if connectionShare > 0 { offerIdle(u.key) }
    }

    /// An idle pooled connection for `key`: `preferred` when it is still parked there,
    /// otherwise the most recently parked one.
    func checkoutUpstream(_ key: UpstreamKey, preferring preferred: UpstreamConnection?) -> UpstreamConnection? {
        if let p = preferred, p.state == .idle, p.key == key, pool.take(p, key: key) { return p }
        return pool.checkout(key)
    }

    /// Closes one idle pooled connection to free its descriptor. False when the pool is empty.
    func closeOneIdleUpstream() -> Bool {
        guard let u = pool.removeOldest() else { return false }
        u.close()
        return true
    }

    /// Descriptors ran out (accept failed): idle pooled connections, which the client cap
    /// does not budget for (one set per upstream), give way to clients. Closes up to `count`.
    func shedIdleUpstreams(_ count: Int) {
        for _ in 0..<count where closeOneIdleUpstream() {}
    }

    func idleUpstreamClosed(_ u: UpstreamConnection) {
        pool.remove(u, key: u.key)
        u.close()
    }

    func upstreamOpened() { upstreamsOpen += 1 }
    func upstreamClosed() { upstreamsOpen -= 1 }

    // MARK: tasks

    /// The in-flight tasks: one per client connection with an exchange (the connections are
    /// the table, so a task costs the hot path no insert or remove of its own).
    func taskSnapshots() -> WorkerTasks {
        let now = EventLoop.nowNanos()
        var tasks: [TaskSnapshot] = []
        for c in clients.values {
            if let ex = c.exchange {
                tasks.append(ex.snapshot(worker: index, now: now))
            } else if let t = c.tunnel {
                tasks.append(t.snapshot(worker: index, now: now))
            }
        }
        let idle = pool.idleCount
        return WorkerTasks(worker: index, tasks: tasks, upstreamsInUse: upstreamsOpen - idle, upstreamsIdle: idle)
    }

    /// Cancels the task with this id (every task when nil): client connection closed,
    /// upstream connection dropped. Returns what it cancelled.
    func cancelTasks(id: String?) -> [TaskSnapshot] {
        let now = EventLoop.nowNanos()
        var cancelled: [TaskSnapshot] = []
        for c in Array(clients.values) {
            if let t = c.tunnel, id == nil || t.id.description == id {
                var snap = t.snapshot(worker: index, now: now)
                snap.state = .cancelled
                cancelled.append(snap)
                t.cancel()
                continue
            }
            guard let ex = c.exchange, id == nil || ex.id.description == id else { continue }
            var snap = ex.snapshot(worker: index, now: now)
            snap.state = .cancelled
            cancelled.append(snap)
            ex.cancel()
        }
        return cancelled
    }

    // MARK: shutdown

    /// Stop taking new requests: idle connections close now, busy ones after their exchange.
    func beginDrain() {
        draining = true
        for u in pool.removeAll() { u.close() }
        for c in Array(clients.values) { c.drain() }
        checkIdle()
    }

    /// Drain timeout passed: close everything.
    func forceClose() {
        for c in Array(clients.values) { c.abort() }
        for u in pool.removeAll() { u.close() }
    }
}
