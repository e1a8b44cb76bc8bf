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
    /// `route`'s cache on this worker, made on first use (with its metric handles). An
    /// exchange takes it once, at its lookup, and goes on with that one: a reload retires the
    /// worker's caches, and a fill in flight across it ends in the cache it began in (emptied),
    /// rather than making the route's cache again from the route as it was.
    func routeCache(_ route: Route) -> RouteCache {
        if let last = lastRouteCache, last.route === route { return last.cache }
        let c = caches[route.config.name] ?? makeCache(route)
        lastRouteCache = (route, c)
        return c
    }

    /// Runs `body` on the cache in place (it is never copied), marks the cache's counters for
    /// publishing at the end of the loop iteration, and queues the first slice of a purge it
    /// began (or of entries it left to free) on the loop.
    func withCache<R>(_ c: RouteCache, _ body: (inout ResponseCache) -> R) -> R {
        let result = body(&c.cache)
        counted(c)
        if c.cache.hasWork && !c.purgeScheduled {
            c.purgeScheduled = true
            loop.execute { [self] in self.purgeSlice(c) }
        }
        return result
    }

    /// `c`'s counters are published when this loop iteration's callbacks are done
    /// (`publishCacheCounters`), once for all the requests of the iteration: comparing and
    /// adding them after every call to the cache was ~300 instructions and two atomic adds per
    /// miss.
    private func counted(_ c: RouteCache) {
        guard !c.countersPending else { return }
        c.countersPending = true
        countedCaches.append(c)
    }

    /// Adds what each cache used in this iteration gained to the route's metrics (the loop's
    /// `beforeFlush`: before the iteration's responses are written).
    func publishCacheCounters() {
        guard !countedCaches.isEmpty else { return }
        for c in countedCaches { c.publishCounters() }
        countedCaches.removeAll(keepingCapacity: true)
    }

    /// Entries a purge drops per loop turn (`ResponseCache.purgeSlice`): about 100 µs of work.
    static let purgeSlice = 128

    /// A reload's end of the routes' caches (a route's cache may have changed or gone: entries
    /// are fetched again): each emptied at once, its entries freed a slice per loop turn.
    func retireCaches() {
        let first = retiredCaches.isEmpty
        for c in caches.values where c.cache.count > 0 || c.cache.hasWork {
            c.cache.retireAll()
            retiredCaches.append(c)
        }
        caches = [:]
        if first && !retiredCaches.isEmpty { loop.execute { [self] in self.freeRetiredSlice() } }
    }

    private func freeRetiredSlice() {
        guard let last = retiredCaches.last else { return }
        if !last.cache.purgeStep() { retiredCaches.removeLast() }
        if !retiredCaches.isEmpty { loop.execute { [self] in self.freeRetiredSlice() } }
    }

    /// One slice of a purge a store began (past the route's `memory`, the store itself dropped
    /// only what brought the cache back within it) or of entries `DELETE /cache` left, queued
    /// again on the loop until it is done: the loop's connections wait at most one slice for it.
    private func purgeSlice(_ c: RouteCache) {
        guard c.purgeScheduled else { return }
        let more = c.cache.purgeStep()
        counted(c)
        if more {
            loop.execute { [self] in self.purgeSlice(c) }
        } else {
            c.purgeScheduled = false
        }
    }

    /// `route`'s cache made: its share of `memory` and `purge_to`, its metric handles.
    private func makeCache(_ route: Route) -> RouteCache {
        let name = route.config.name
        guard let c = route.config.cache else { preconditionFailure("routeCache on route \(name), which has no cache") }
        let workers = max(1, context.config.workers)
        let share = { (n: Int64) in Int(max(1, n / Int64(workers))) }
        var cache = ResponseCache(limits: ResponseCache.Limits(memory: share(c.memory), purgeTo: share(c.purgeTo),
                                                               maxObject: Int(c.maxObject)),
                                  heuristicPercent: c.heuristicPercent)
        cache.purgeSlice = Self.purgeSlice
        let made = RouteCache(name: name, cache: cache, metrics: CacheMetrics(route: name, factory: context.metrics.factory))
        caches[name] = made
        if loop.beforeFlush == nil {
            // (The worker lives as long as its loop runs.)
            loop.beforeFlush = { [unowned(unsafe) self] in self.publishCacheCounters() }
        }
        return made
    }

    /// Requests waiting for another's fill of `key` (request collapsing), woken when it ends:
    /// each looks up again (a hit after a store) or goes upstream itself.
    func waitForFill(_ key: CacheKey, _ ex: Exchange) {
        cacheWaiters[key.fillID, default: []].append(ex)
    }

    /// The fill ended: the waiters of its key go on, each on a later loop turn.
    func fillEnded(_ fill: ResponseCache.Fill, stored: Bool) {
        // Nobody waiting on any fill (the usual case): no hashing of the key, nor a copy of it
        // (the fill is passed, not its key: passing the key copied its two strings).
        guard !cacheWaiters.isEmpty, let waiting = cacheWaiters.removeValue(forKey: fill.key.fillID) else { return }
        let first = cacheWakeups.isEmpty
        cacheWakeups += waiting.map { ($0, stored) }
        if first { loop.execute { [self] in self.wakeFillWaiters() } }
    }

    private func wakeFillWaiters() {
        let woken = cacheWakeups
        cacheWakeups = []
        for (ex, stored) in woken { ex.fillWaitEnded(stored: stored) }
    }

    /// `GET /cache`: this worker's `limit` most recently used entries per route, and its counts.
    func cacheListing(limit: Int) -> [WorkerCache] {
        let now = Int64(time(nil))
        return caches.keys.sorted().map { name in
            let c = caches[name]!.cache   // a copy of the table's reference, not of its entries
            return WorkerCache(route: name, entries: c.listing(now: now, limit: limit), count: c.count, bytes: c.bytes,
                               counters: c.counters)
        }
    }

    /// `DELETE /cache[?url=]`: entries removed on this worker.
    func cacheRemove(url: String?) -> Int {
        var removed = 0
        for c in caches.values { removed += withCache(c) { $0.remove(url: url) } }   // emptied: freed in slices
        return removed
    }
}

/// One route's cache on one worker, for `GET /cache`.
struct WorkerCache: Sendable {
    var route: String
    /// The most recently used entries, up to the listing's limit.
    var entries: [ResponseCache.Listing]
    /// All entries.
    var count: Int
    var bytes: Int
    var counters: ResponseCache.Counters
}

/// A route's cache on one worker, and its metric handles (made once, not per request). A
/// class: the worker's table and the exchanges that use it share it (`Worker.routeCache`), and
/// its `ResponseCache` is changed in place, on the worker's loop only.
final class RouteCache: @unchecked Sendable {  // bound to its worker's loop, as the Worker is
    let name: String
    var cache: ResponseCache
    let metrics: CacheMetrics
    /// A purge slice is queued on the loop (`Worker.purgeSlice`).
    var purgeScheduled = false
    /// Used in this loop iteration: its counters are published when the iteration's callbacks
    /// are done (`Worker.publishCacheCounters`).
    var countersPending = false
    /// The counters as last added to `metrics`.
    private var published = ResponseCache.Counters()

    /// Adds what the counters gained since the last time to the metrics.
    func publishCounters() {
        countersPending = false
        let now = cache.counters
        guard now != published else { return }
        metrics.add(before: published, after: now)
        published = now
    }

    init(name: String, cache: ResponseCache, metrics: CacheMetrics) {
        self.name = name
        self.cache = cache
        self.metrics = metrics
    }
}

/// `airlock_cache_hits_total`, `_misses_total`, `_revalidations_total`, `_stores_total`,
/// `_evictions_total` and `_hit_bytes_total` (body bytes served from memory) for one route.
final class CacheMetrics: Sendable {
    private let hits, misses, revalidations, stores, evictions, hitBytes: CoreMetrics.Counter

    init(route: String, factory: any MetricsFactory) {
        func counter(_ name: String) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name, dimensions: [("route", route)], factory: factory)
        }
        hits = counter("airlock_cache_hits_total")
        misses = counter("airlock_cache_misses_total")
        revalidations = counter("airlock_cache_revalidations_total")
        stores = counter("airlock_cache_stores_total")
        evictions = counter("airlock_cache_evictions_total")
        hitBytes = counter("airlock_cache_hit_bytes_total")
    }

    /// What the cache's counters gained between two readings.
    func add(before: ResponseCache.Counters, after: ResponseCache.Counters) {
        func add(_ c: CoreMetrics.Counter, _ delta: Int) { if delta > 0 { c.increment(by: delta) } }
        add(hits, after.hits - before.hits)
        add(misses, after.misses - before.misses)
        add(revalidations, after.revalidations - before.revalidations)
        add(stores, after.stores - before.stores)
        add(evictions, after.evictions - before.evictions)
        add(hitBytes, after.hitBytes - before.hitBytes)
    }
}
