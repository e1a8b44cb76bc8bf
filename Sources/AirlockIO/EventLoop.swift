import CLibevent
import Glibc
import Synchronization

/// One libevent `event_base` driven by one thread. Objects created on a loop stay on it;
/// other threads reach it only through `execute(_:)`, which queues the work under a
/// mutex and wakes the loop through an eventfd. The base itself is lock-free
/// (EVENT_BASE_FLAG_NOLOCK): no other thread ever touches it.
public final class EventLoop: @unchecked Sendable {
    public let name: String
    let base: OpaquePointer
    private var wakeEvent: OpaquePointer?
    private let wakeFD: Int32
    /// Work other threads queued for this loop (`execute`).
    private let inbox = Mutex(Inbox())
    private let stopping = Atomic<Bool>(false)
    private var thread: pthread_t?
    /// Streams written to during the current iteration, flushed when it ends: those that
    /// carry requests to upstreams first, then the rest (responses to clients).
    private var dirtyUpstream: [Stream] = []
    private var dirty: [Stream] = []
    private var flushing: [Stream] = []
    private var flushAlone: [Stream] = []
    /// Streams the batched flush had to write on their own (output in more chains than one
    /// ring send carries, or an encryption failure to report): a count for tests.
    private(set) var flushedAlone = 0
    /// Where a loop iteration's writes go out in one system call (nil: one `send`
    /// each); `sendBatching` says which and why.
    private let sendRing: SendRing?
    public let sendBatching: String

    private var commonTimeouts: [Duration: timeval] = [:]

    /// Runs on the loop's thread when each iteration ends, after its writes (a worker hands
    /// its buffered log records over there). Set before the loop runs.
    public var onIterationEnd: (() -> Void)?

    /// Runs on the loop's thread when each iteration's callbacks are done, before its writes
    /// (a worker publishes the iteration's cache counters there, so a client that has its
    /// response finds them counted). Set on the loop's thread.
    public var beforeFlush: (() -> Void)?

    /// Where this loop's streams read small inputs before appending them (see
    /// `Stream.readOnce`); one per loop, never shared across threads.
    let readScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Stream.readChunk, alignment: 16)
    /// Bounce buffer for `Stream.moveInput`'s small copies (never the read scratch, which
    /// may hold a stream's staged input at that moment).
    let moveScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Stream.copyMoveLimit, alignment: 16)
    /// The input and output buffer of every stream on this loop that holds none of its own
    /// (`Stream.input`, `Stream.output`): always empty, never written to.
    let emptyBuffer: OpaquePointer = evbuffer_new()
    /// Output buffers streams gave back once all their output had gone, for the next stream
    /// that writes (`Stream.writableOutput`): an idle connection holds none, and a request
    /// does not cost an allocation for one. At most `spareOutputsMax`.
    private var spareOutputs: [OpaquePointer] = []
    static let spareOutputsMax = 64
    /// The pipes this loop's streams splice through (`Stream+Splice`), and what they moved.
    public let pipes = PipePool()

    /// libevent's "common timeout" for `d`: events that share a duration sit in one
    /// queue with O(1) re-arming, instead of the min-heap (every read re-arms a stream's
    /// idle timeout).
    /// A read and a write timeout with their common-timeout timevals, looked up once.
    public func timeouts(read: Duration?, write: Duration?) -> StreamTimeouts {
        StreamTimeouts(read: read, write: write, readTV: read.map(commonTimeout), writeTV: write.map(commonTimeout))
    }

    func commonTimeout(_ d: Duration) -> timeval {
        if let tv = commonTimeouts[d] { return tv }
        var tv = d.timeval
        let common = event_base_init_common_timeout(base, &tv).map { $0.pointee } ?? tv
        commonTimeouts[d] = common
        return common
    }

    /// An empty output buffer: a spare one, or a new one.
    func takeOutputBuffer() -> OpaquePointer {
        spareOutputs.popLast() ?? evbuffer_new()
    }

    /// Takes back an empty output buffer (freed when enough are spare).
    func giveBackOutputBuffer(_ b: OpaquePointer) {
        if spareOutputs.count < Self.spareOutputsMax { spareOutputs.append(b) } else { evbuffer_free(b) }
    }

    func markDirty(_ s: Stream) {
        if s.flushesFirst { dirtyUpstream.append(s) } else { dirty.append(s) }
    }

    /// Called when each loop iteration ends: writes what was queued, straight to the
    /// sockets, without a round trip through epoll: every output of up to
    /// `SendRing.maxBuffers` chains (a TLS stream's once encrypted) in one io_uring submission
    /// (`SendRing`) when the loop has a ring, the rest (bulk output in more chains) one stream
    /// at a time.
    ///
    /// Requests go out before responses (as HAProxy orders its sends): the upstream can start
    /// on the whole batch while the responses are written, and, sharing a CPU with us, it
    /// is woken once for more requests instead of once per request. Measured with the bench
    /// upstream: fewer upstream wake-ups per request than with the order of the events.
    func flushDirty() {
        guard let ring = sendRing, !ring.broken else { return flushEachDirty() }
        while !dirtyUpstream.isEmpty || !dirty.isEmpty {
            // Both lists in one submission, requests first; flushing may dirty more
            // streams (the next round), and no list is copied.
            swap(&dirtyUpstream, &flushing)
            flushing.append(contentsOf: dirty)
            dirty.removeAll(keepingCapacity: true)
            for s in flushing {
                if ring.broken || !s.queueFlush(on: ring) { flushAlone.append(s) }
                if ring.isFull { submit(ring) }
            }
            flushing.removeAll(keepingCapacity: true)
            submit(ring)
            flushedAlone &+= flushAlone.count
            for s in flushAlone { s.flush() }
            flushAlone.removeAll(keepingCapacity: true)
        }
    }

    private func submit(_ ring: SendRing) {
        guard !ring.isEmpty else { return }
        ring.submit()
        for i in 0..<ring.count { ring.streams[i].queuedFlushSent(ring.result(i)) }
        for i in 0..<ring.count { ring.streams[i].queuedFlushDone(ring.result(i)) }
        ring.clear()
    }

    /// `flushDirty` without a ring: one `send` per stream.
    private func flushEachDirty() {
        // Lists swapped in turn: flushing may dirty more streams, and no list is copied.
        while !dirtyUpstream.isEmpty || !dirty.isEmpty {
            if dirtyUpstream.isEmpty { swap(&dirtyUpstream, &dirty) }
            swap(&dirtyUpstream, &flushing)
            for s in flushing { s.flush() }
            flushing.removeAll(keepingCapacity: true)
        }
    }

    /// `batchSends`: write each iteration's output through io_uring where the kernel
    /// allows it (see `SendRing`); otherwise, or when false, one `send` per stream.
    public init(name: String, batchSends: Bool = false) {
        IORuntime.setUp()
        self.name = name
        let cfg = event_config_new()
        event_config_set_flag(cfg, airlock_EVENT_BASE_FLAG_NOLOCK())
        base = event_base_new_with_config(cfg)!
        event_config_free(cfg)
        wakeFD = airlock_eventfd()
        switch batchSends ? SendRing.make() : .failure(IOError(.ioUring, "io_uring: off")) {
        case .success(let r):
            sendRing = r
            sendBatching = "io_uring"
        case .failure(let e):
            sendRing = nil
            sendBatching = "send per stream (\(e.detail))"
        }
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        // Persistent read event on the eventfd: it also keeps the loop alive with no connections.
        wakeEvent = event_new(base, wakeFD, airlock_ev_read() | airlock_ev_persist(), eventLoopWakeCallback, ctx)
        event_add(wakeEvent, nil)
    }

    deinit {
        if let e = wakeEvent { event_free(e) }
        event_base_free(base)
        Glibc.close(wakeFD)
        readScratch.deallocate()
        moveScratch.deallocate()
        evbuffer_free(emptyBuffer)
        for b in spareOutputs { evbuffer_free(b) }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    /// Runs `work` on this loop's thread, in submission order.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let mustWake = inbox.withLock { inbox -> Bool in
            inbox.pending.append(work)
            defer { inbox.wakePending = true }
            return !inbox.wakePending
        }
        if mustWake { wake() }
    }

    fileprivate func drainPending() {
        var counter: UInt64 = 0
        _ = Glibc.read(wakeFD, &counter, 8)
        let jobs = inbox.withLock { inbox -> [@Sendable () -> Void] in
            let j = inbox.pending
            inbox.pending.removeAll(keepingCapacity: true)
            inbox.wakePending = false
            return j
        }
        for job in jobs { job() }
    }

    /// Runs the loop on the calling thread until `stop()`.
    public func run() {
        // One iteration at a time: every callback of the iteration queues its output, then
        // all of it is written at once. Reads are batched before writes, so a peer woken
        // by our first write finds the rest of the batch waiting.
        // (A persistent event with no fd keeps the loop alive with no connections.)
        while !stopping.load(ordering: .acquiring) {
            if !runOnce() { break }
        }
    }

    /// One iteration of `run`: waits for events (unless `blocking` is false), runs their
    /// callbacks, then writes what they queued. False when libevent fails or has no events.
    @discardableResult
    func runOnce(blocking: Bool = true) -> Bool {
        let flags = blocking ? EVLOOP_ONCE : EVLOOP_ONCE | EVLOOP_NONBLOCK
        if event_base_loop(base, flags) != 0 { return false }
        beforeFlush?()
        flushDirty()
        onIterationEnd?()
        return true
    }

    /// Whether writes go through io_uring now (false once a submission failed).
    var batchesSends: Bool { sendRing.map { !$0.broken } ?? false }

    /// Starts a dedicated thread that runs the loop.
    public func startThread() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        pthread_create(&t, nil, { arg in
            let loop = Unmanaged<EventLoop>.fromOpaque(arg!).takeRetainedValue()
            loop.run()
            return nil
        }, box)
        thread = t
    }

    /// Makes `run()` return after the current iteration (thread-safe).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wake()
    }

    /// Waits for the loop thread started by `startThread()` to finish.
    public func join() {
        if let t = thread { pthread_join(t, nil); thread = nil }
    }

    /// Monotonic time in nanoseconds (cached per loop iteration by libevent is not needed here).
    public static func nowNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

private let eventLoopWakeCallback: @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void = { _, _, ctx in
    Unmanaged<EventLoop>.fromOpaque(ctx!).takeUnretainedValue().drainPending()
}

/// What `execute` hands a loop from other threads, under its mutex.
private struct Inbox {
    var pending: [@Sendable () -> Void] = []
    /// True while a wake-up is written and not yet read (one eventfd write per batch).
    var wakePending = false
}

/// A stream's read and write timeouts, ready for libevent (see `EventLoop.timeouts`).
public struct StreamTimeouts: @unchecked Sendable {
    // Kept without Optionals, "none" being a value no timeout has: four Optionals took 89
    // bytes (a tag and padding each), these take 64, in every stream.
    private let readValue: Duration
    private let writeValue: Duration
    private let readTimeval: timeval
    private let writeTimeval: timeval

    private static let noDuration = Duration.seconds(Int64.min)
    private static let noTimeval = Glibc.timeval(tv_sec: -1, tv_usec: -1)

    init(read: Duration?, write: Duration?, readTV: timeval?, writeTV: timeval?) {
        readValue = read ?? Self.noDuration
        writeValue = write ?? Self.noDuration
        readTimeval = readTV ?? Self.noTimeval
        writeTimeval = writeTV ?? Self.noTimeval
    }

    var read: Duration? { readValue == Self.noDuration ? nil : readValue }
    var write: Duration? { writeValue == Self.noDuration ? nil : writeValue }
    var readTV: timeval? { readTimeval.tv_usec < 0 ? nil : readTimeval }
    var writeTV: timeval? { writeTimeval.tv_usec < 0 ? nil : writeTimeval }
}
