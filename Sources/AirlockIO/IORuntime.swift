import CLibevent
import Glibc

/// One-time process setup for the event core: libevent's pthread locking (needed so
/// one loop can be woken from another thread) and SIGPIPE ignored (a peer that closes
/// mid-write must give EPIPE, never kill the process).
public enum IORuntime {
    private static let once: Void = {
        _ = evthread_use_pthreads()
        signal(SIGPIPE, SIG_IGN)
    }()

    public static func setUp() { _ = once }
}
