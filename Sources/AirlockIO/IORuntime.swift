import CLibevent
import Glibc

/// One-time process setup for the event core: libevent's pthread locking (needed so
/// one loop can be woken from another thread), SIGPIPE ignored (a peer that closes
/// mid-write must give EPIPE, never kill the process), and malloc tuned for buffers.
public enum IORuntime {
    private static let once: Void = {
        _ = evthread_use_pthreads()
        signal(SIGPIPE, SIG_IGN)
        // Body buffers and cache entries come and go: freed memory is kept a while instead of
        // given back to the kernel and faulted in again (`Allocator.configure`).
        Allocator.configure()
    }()

    public static func setUp() { _ = once }

    /// Sends libevent's own log lines (warnings and errors it would print raw to stderr) to
    /// `handler` with their severity (0 debug, 1 msg, 2 warn, 3 err). Set once at start, before
    /// any loop runs; the handler may be called from any loop's thread.
    public static func routeLibeventLogs(to handler: @escaping @Sendable (Int32, String) -> Void) {
        libeventLogHandler = handler
        event_set_log_callback(libeventLogCallback)
    }

    /// Makes libevent log `message` at warning severity, through its own logger (for tests).
    public static func emitLibeventWarning(_ message: String) {
        airlock_event_warnx(message)
    }
}

/// Written once by `routeLibeventLogs` before any loop thread starts, only read afterwards.
nonisolated(unsafe) private var libeventLogHandler: (@Sendable (Int32, String) -> Void)?

private let libeventLogCallback: @convention(c) (Int32, UnsafePointer<CChar>?) -> Void = { severity, message in
    guard let message, let handler = libeventLogHandler else { return }
    handler(severity, String(cString: message))
}
