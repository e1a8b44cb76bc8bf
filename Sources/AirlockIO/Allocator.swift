import CMimalloc
import Glibc

/// The process's memory allocator. Airlock links mimalloc (Debian's libmimalloc), which takes
/// the place of glibc's malloc for the whole process: the response cache's miss path stores
/// and evicts several small blocks per request, long after they were touched, and glibc's
/// malloc and free spent ~1.1 µs per such request (perf, bench/README.md); mimalloc's
/// per-page free lists spend less. Envoy links tcmalloc, and HAProxy can be built with
/// jemalloc, for the same reason.
public enum Allocator {
    /// malloc is mimalloc's (false: it is linked, but another malloc came first, e.g. an
    /// LD_PRELOAD of glibc's or jemalloc's).
    public static var isMimalloc: Bool { airlock_malloc_is_mimalloc() }

    /// What `airlock.listening` names: "mimalloc 2.0.9", or "other" when mimalloc is not in
    /// effect (glibc's malloc, or one preloaded).
    public static var description: String {
        guard isMimalloc else { return "other" }
        let v = Int(airlock_mimalloc_version())
        return "mimalloc \(v / 100).\(v / 10 % 10).\(v % 10)"
    }

    /// Bytes in blocks allocated on the calling thread's heap (mimalloc's heaps are per
    /// thread): what a test measures across code it runs on its own thread, as glibc's
    /// `mallinfo2().uordblks` was. 0 when mimalloc is not in effect.
    public static var threadHeapInUse: Int { isMimalloc ? Int(airlock_mimalloc_thread_heap_in_use()) : 0 }

    /// Milliseconds freed memory stays committed before mimalloc gives it back to the kernel
    /// (`MIMALLOC_DECOMMIT_DELAY`; 0 when mimalloc is not in effect).
    public static var decommitDelay: Int { isMimalloc ? Int(airlock_mimalloc_decommit_delay()) : 0 }

    /// Set once per process (`IORuntime.setUp`): freed memory given back to the kernel after
    /// 1 s instead of mimalloc's 25 ms. A response cache that stores and evicts an entry per
    /// request frees pages that the next stores use again within milliseconds; given back at
    /// 25 ms, each came back as a page fault: 0.15 faults per cache miss, 0.011 with 1 s (miss
    /// throughput +3 %, the 100 MiB cache's RSS 107 MiB instead of 101-105; bench/README.md).
    /// An operator's `MIMALLOC_DECOMMIT_DELAY` is left as set. When another malloc came first
    /// (glibc's), glibc's is tuned as before mimalloc: trimmed past 64 MiB free, mmap from 4 MiB.
    public static let decommitDelayMillis = 1000

    public static func configure() {
        guard isMimalloc else {
            _ = airlock_tune_glibc_malloc(64 << 20, 4 << 20)
            return
        }
        guard getenv("MIMALLOC_DECOMMIT_DELAY") == nil else { return }
        airlock_mimalloc_set_decommit_delay(decommitDelayMillis)
    }
}
