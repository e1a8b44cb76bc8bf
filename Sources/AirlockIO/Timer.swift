import CLibevent
import Glibc

/// A one-shot timer on a loop. Re-arm with `schedule(after:)`; `cancel()` disarms.
public final class Timer {
    private var event: OpaquePointer?
    private let action: () -> Void
    /// The event must be freed before its base: the timer keeps its loop alive.
    private let loop: EventLoop

    public init(loop: EventLoop, action: @escaping () -> Void) {
        self.action = action
        self.loop = loop
        event = nil
        event = event_new(loop.base, -1, 0, timerCallback, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { if let e = event { event_free(e) } }

    public func schedule(after d: Duration) {
        var tv = d.timeval
        event_add(event, &tv)
    }

    public func cancel() { event_del(event) }

    public var isScheduled: Bool { event_pending(event, airlock_ev_timeout(), nil) != 0 }

    fileprivate func fire() { action() }
}

private let timerCallback: @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void = { _, _, ctx in
    let t = Unmanaged<Timer>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(t) { t.fire() }
}
