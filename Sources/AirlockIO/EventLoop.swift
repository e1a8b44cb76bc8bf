import CLibevent
import Glibc

/// One libevent `event_base` driven by one thread. Objects created on a loop stay on it;
/// other threads reach it only through `execute(_:)`.
public final class EventLoop: @unchecked Sendable {
    public let name: String
    let base: OpaquePointer
    private var wakeEvent: OpaquePointer?
    private var pending: [@Sendable () -> Void] = []
    private let lock = Mutex()
    private var thread: pthread_t?

    public init(name: String) {
        IORuntime.setUp()
        self.name = name
        let cfg = event_config_new()
        // Ask for a base that other threads may wake (locks were set up by IORuntime).
        base = event_base_new_with_config(cfg)!
        event_config_free(cfg)
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        wakeEvent = event_new(base, -1, airlock_ev_persist(), eventLoopWakeCallback, ctx)
        event_add(wakeEvent, nil)  // persistent, no fd, no timeout: fires only when activated
    }

    deinit {
        if let e = wakeEvent { event_free(e) }
        event_base_free(base)
    }

    /// Runs `work` on this loop's thread, in submission order.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        lock.withLock { pending.append(work) }
        event_active(wakeEvent, Int32(airlock_ev_read()), 0)
    }

    fileprivate func drainPending() {
        let jobs = lock.withLock { () -> [@Sendable () -> Void] in
            let j = pending
            pending.removeAll(keepingCapacity: true)
            return j
        }
        for job in jobs { job() }
    }

    /// Runs the loop on the calling thread until `stop()`.
    public func run() {
        // A persistent event with no fd keeps the loop alive even with no connections.
        event_base_loop(base, 0)
    }

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

    /// Makes `run()` return after the current callbacks (thread-safe).
    public func stop() {
        event_base_loopbreak(base)
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

/// A small pthread mutex (Foundation stays out of the I/O module).
final class Mutex: @unchecked Sendable {
    private var m = pthread_mutex_t()
    init() { pthread_mutex_init(&m, nil) }
    deinit { pthread_mutex_destroy(&m) }
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(&m)
        defer { pthread_mutex_unlock(&m) }
        return try body()
    }
}
