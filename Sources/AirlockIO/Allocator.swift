import CMimalloc

/// The process's memory allocator. Airlock links mimalloc (Debian's libmimalloc), which takes
/// the place of glibc's malloc for the whole process: the response cache's miss path stores
/// and evicts several small blocks per request, long after they were touched, and glibc's
/// malloc and free spent ~1.1 µs per such request (perf, bench/README.md); mimalloc's
/// per-page free lists spend less. Pingora links jemalloc for the same reason.
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
}
