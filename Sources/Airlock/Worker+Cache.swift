import AirlockConfig
import AirlockIO
import AirlockSession
import CoreMetrics
import Glibc

/// The routes' response caches (`routes[].cache`, issue #21), one per route on each worker: an
/// exchange and its cache live on one loop, so a lookup takes no lock. Each worker's share of
/// `memory` and `purge_to` is the route's divided by the workers (as `max_connections_per_upstream`
/// is), so the process stays within the configured bytes; request collapsing works within a
/// worker (with N workers, concurrent misses of one URL make at most N upstream requests).
extension Worker {
    /// Runs `body` on `route`'s cache (made on first use), then moves the cache's counters into
    /// the route's metrics.
    func withCache<R>(_ route: Route, _ body: (inout ResponseCache) -> R) -> R {
        let name = route.config.name
        if caches[name] == nil, let c = route.config.cache {
            let workers = max(1, context.config.workers)
            let share = { (n: Int64) in Int(max(1, n / Int64(workers))) }
            caches[name] = ResponseCache(limits: ResponseCache.Limits(memory: share(c.memory), purgeTo: share(c.purgeTo),
                                                                      maxObject: Int(c.maxObject)),
                                         heuristicPercent: c.heuristicPercent)
        }
        let before = caches[name]?.counters ?? ResponseCache.Counters()
        let result = body(&caches[name, default: ResponseCache()])
        let after = caches[name]!.counters
        context.metrics.cacheCounted(route: name, before: before, after: after)
        return result
    }

    /// Requests waiting for another's fill of `key` (request collapsing), woken when it ends:
    /// each looks up again (a hit after a store) or goes upstream itself.
    func waitForFill(_ key: CacheKey, _ ex: Exchange) {
        cacheWaiters[key, default: []].append(ex)
    }

    /// The fill of `key` ended: its waiters go on, each on a later loop turn.
    func fillEnded(_ key: CacheKey, stored: Bool) {
        guard let waiting = cacheWaiters.removeValue(forKey: key) else { return }
        let first = cacheWakeups.isEmpty
        cacheWakeups += waiting.map { ($0, stored) }
        if first { loop.execute { [self] in self.wakeFillWaiters() } }
    }

    private func wakeFillWaiters() {
        let woken = cacheWakeups
        cacheWakeups = []
        for (ex, stored) in woken { ex.fillWaitEnded(stored: stored) }
    }

    /// `GET /cache`: this worker's entries per route.
    func cacheListing() -> [WorkerCache] {
        let now = Int64(time(nil))
        return caches.sorted { $0.key < $1.key }.map {
            WorkerCache(route: $0.key, entries: $0.value.listing(now: now), bytes: $0.value.bytes, counters: $0.value.counters)
        }
    }

    /// `DELETE /cache[?url=]`: entries removed on this worker.
    func cacheRemove(url: String?) -> Int {
        var removed = 0
        for name in Array(caches.keys) { removed += caches[name]!.remove(url: url) }
        return removed
    }
}

/// One route's cache on one worker, for `GET /cache`.
struct WorkerCache: Sendable {
    var route: String
    var entries: [ResponseCache.Listing]
    var bytes: Int
    var counters: ResponseCache.Counters
}

extension GatewayMetrics {
    /// The cache's counters as Prometheus counters per route: `airlock_cache_hits_total`,
    /// `_misses_total`, `_revalidations_total`, `_stores_total`, `_evictions_total`,
    /// `_hit_bytes_total` (body bytes served from memory). Only what changed is looked up.
    func cacheCounted(route: String, before: ResponseCache.Counters, after: ResponseCache.Counters) {
        func add(_ name: String, _ delta: Int) {
            guard delta > 0 else { return }
            CoreMetrics.Counter(label: name, dimensions: [("route", route)], factory: factory).increment(by: delta)
        }
        add("airlock_cache_hits_total", after.hits - before.hits)
        add("airlock_cache_misses_total", after.misses - before.misses)
        add("airlock_cache_revalidations_total", after.revalidations - before.revalidations)
        add("airlock_cache_stores_total", after.stores - before.stores)
        add("airlock_cache_evictions_total", after.evictions - before.evictions)
        add("airlock_cache_hit_bytes_total", after.hitBytes - before.hitBytes)
    }
}
