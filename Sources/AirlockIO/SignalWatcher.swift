import CLibevent
import Glibc

/// Delivers SIGTERM/SIGINT (or any signal) as a callback on a loop.
public final class SignalWatcher {
    private var events: [OpaquePointer] = []
    private let action: (Int32) -> Void
    /// The events must be freed before their base: the watcher keeps its loop alive.
    private let loop: EventLoop

    public init(loop: EventLoop, signals: [Int32], action: @escaping (Int32) -> Void) {
        self.action = action
        self.loop = loop
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        for s in signals {
            if let e = event_new(loop.base, s, Int16(EV_SIGNAL | EV_PERSIST), signalCallback, ctx) {
                event_add(e, nil)
                events.append(e)
            }
        }
    }

    deinit { cancel() }

    public func cancel() {
        for e in events { event_free(e) }
        events.removeAll()
    }

    fileprivate func fire(_ sig: Int32) { action(sig) }
}

private let signalCallback: @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void = { sig, _, ctx in
    let w = Unmanaged<SignalWatcher>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(w) { w.fire(sig) }
}
