import CLibevent
import Glibc

/// One-time process setup for the event core: libevent's pthread locking (needed so
/// one loop can be woken from another thread), SIGPIPE ignored (a peer that closes
/// mid-write must give EPIPE, never kill the process), and malloc tuned for buffers.
public enum IORuntime {
    private static let once: Void = {
        _ = evthread_use_pthreads()
        signal(SIGPIPE, SIG_IGN)
        // Body buffers come and go by the tens of KiB: keep freed memory in the heap
        // instead of trimming it back to the kernel and faulting it in again.
        _ = airlock_tune_malloc(64 << 20, 4 << 20)
    }()

    public static func setUp() { _ = once }
}
