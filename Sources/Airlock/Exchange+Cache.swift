import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire
import Glibc

/// What an exchange on a route with a cache (`routes[].cache`) knows of it: held inline in the
/// exchange (`Exchange.cache`), `active` from its lookup on, and changed in place there. As a
/// class, each cache phase retained and released it, and its allocation and release were the
/// miss path's own; as an optional struct, every access asked an outlined function for its
/// case (~330 instructions a miss).
struct CacheState {
    /// The request's absolute URL, as the key of its entry without a variant (`CacheKey.of`).
    private(set) var key: CacheKey?
    /// The route's cache on this worker when the exchange looked up: every later step of the
    /// exchange goes to this one (after a reload, the retired one).
    private(set) var routeCache: RouteCache?

    /// The exchange's route has a cache and it looked up (`begin`): what follows is set.
    var active: Bool { routeCache != nil }
    /// The upstream request the cache takes part in (a miss or a revalidation), until it ends.
    var fill: ResponseCache.Fill?
    /// The body copied while it is relayed, for the store; `teeing` stops past `max_object`.
    var body: [UInt8] = []
    var teeing = false
    var maxObject = 0
    /// The response's `Cache-Status` (RFC 9211), which `writeResponseHead` writes.
    var status: CacheStatus?
    /// What `.deliverCachedResponse` writes.
    var hit: ResponseCache.Hit?
    /// It waited for another request's fill.
    var collapsed = false

    init() {}

    /// The lookup's start: the key and the route's cache, kept for the exchange's later steps.
    mutating func begin(key: consuming CacheKey, routeCache: consuming RouteCache) {
        self.key = key
        self.routeCache = routeCache
    }
}

/// The cache phases (Pingora's `request_cache_filter` / `response_cache_filter`): a lookup
/// after the route is known and before any upstream is chosen, and a store decision once the
/// response is whole and judged by the route's validators (a rejected response is never stored).
/// `ResponseCache` (AirlockSession) holds every RFC 9111 rule; this carries them out: a hit is
/// answered from memory (`ExchangeMachine.answeredFromCache`), a miss or a stale entry goes
/// upstream with the cache's validators, a 304 freshens the entry and serves it, concurrent
/// misses of one key wait for the first (`Worker.waitForFill`).
extension Exchange {
    /// The lookup: true when the exchange is answered (a hit, `only-if-cached`) or waits for
    /// another's fill; false when it goes upstream.
    func cacheLookup(joinFill: Bool = true) -> Bool {
        // The key is made once, into the state (a waiter's second lookup reuses it). The first
        // lookup reads it from here, and it moves into the state after: read from the state,
        // it was retained and released for the call.
        let worker = self.worker
        let now = Int64(time(nil))
        let lookup: ResponseCache.Lookup
        if !cache.active {
            guard let key = worker.phases.requestCacheFilter(self) else { return false }
            let routeCache = worker.routeCache(routeRef)
            lookup = worker.withCache(routeCache) { c in
                cache.maxObject = c.limits.maxObject
                return c.lookup(key: key, request: request, now: now, joinFill: joinFill)
            }
            cache.begin(key: key, routeCache: routeCache)
        } else {
            lookup = worker.withCache(cache.routeCache.unsafelyUnwrapped) { c in
                c.lookup(key: cache.key.unsafelyUnwrapped, request: request, now: now, joinFill: joinFill)
            }
        }
        switch lookup {
        case .hit(let hit):
            cache.status = hit.status
            cache.hit = hit
            run(machine.answeredFromCache())
            return true
        case .forward(let fill):
            cache.status = CacheStatus(fwd: fill.forward, collapsed: cache.collapsed)
            cache.fill = fill
            return false
        case .wait(let key):
            cache.collapsed = true
            worker.waitForFill(key, self)
            return true
        case .bypass(let status):
            cache.status = status
            return false
        case .onlyIfCached(let status):
            cache.status = status
            respond(GatewayError(.notCached, status: 504,
                                 message: "only-if-cached, and the route's cache holds nothing usable for \(cache.key.unsafelyUnwrapped.url)",
                                 source: .client))
            return true
        }
    }

    /// The fill this exchange waited for ended: look up again (a hit after a store), or go
    /// upstream on its own (`joinFill: false`: it does not wait a second time).
    func fillWaitEnded(stored: Bool) {
        guard isCurrent, machine.awaitingResponseHead, upstream == nil else { return }
        if !cacheLookup(joinFill: stored) { connectUpstream() }
    }

    /// The response filter's cache part, on the upstream's final head. A 304 to a revalidation
    /// freshens the stored response, which is served (true: the head is not relayed). Otherwise
    /// the head carries `Cache-Status`, and a fill that may store copies the body as it goes.
    func cacheResponseStarted(_ head: ResponseHead) -> Bool {
        guard cache.active else { return false }
        if let fill = cache.fill {
            if head.status == 304 && fill.revalidates {
                cache.fill = nil
                let now = Int64(time(nil))
                let done = worker.withCache(cache.routeCache.unsafelyUnwrapped) {
                    $0.complete(fill, request: request, response: head, body: [], validated: true, now: now)
                }
                worker.fillEnded(fill, stored: true)
                if case .refreshed(let hit) = done.outcome {
                    cache.hit = hit   // (its `notModified` is the completion's)
                    cache.status = done.status
                    run(machine.answeredFromCache())
                } else {
                    // The entry went (purged or replaced) while it was revalidated: the 304 answers a
                    // condition the client never sent, so it is not relayed.
                    failExchange(GatewayError(.upstreamMalformed, status: 502,
                                              message: "the stored response was revalidated (304) but is no longer stored",
                                              source: .upstream))
                }
                return true
            }
            cache.teeing = fill.stores && worker.phases.responseCacheFilter(self, head, maxObject: cache.maxObject)
            // The copy's room at once when the length is declared (the filter checked it against
            // `max_object`), not grown as the body arrives.
            if cache.teeing, case .length(let n) = head.declaredFraming { cache.body.reserveCapacity(Int(n)) }
        }
        // Written with the head (`writeResponseHead`), not added to it: the relayed head's
        // fields are shared with the response head the store reads, and appending would copy them.
        if cache.status != nil { cache.status!.fwdStatus = cache.fill != nil ? head.status : nil }
        return false
    }

    /// The store decision, once the response body is whole (relayed, or delivered after the
    /// route's validators): stored if `ResponseCache` allows it and the validators passed it.
    func cacheResponseEnded() {
        guard cache.active, let fill = cache.fill.take() else { return }
        var stored = false
        // The response head is moved out of the exchange while the store reads it, and back:
        // read in place from the exchange, it was copied for the call (its strings and arrays
        // retained and released), as the store might have changed the exchange meanwhile.
        if cache.teeing, let head = response.take() {
            let validated = validation.map { $0.rejection == nil } ?? true
            let now = Int64(time(nil))
            // Teeing: the response cache filter found no field refusal. The store reads the
            // response head as it came (never changed once set: the relayed fields are written
            // beside it) and the body, handed over (`swap`); the entry copies both into its
            // block, so the head's arrays stay the relayed head's, which the worker recycles
            // for a later parse when the exchange ends.
            let done = worker.withCache(cache.routeCache.unsafelyUnwrapped) {
                var body: [UInt8] = []
                swap(&body, &cache.body)
                return $0.complete(fill, request: request, response: head, body: body, validated: validated, now: now,
                                   fieldsChecked: true)
            }
            response = consume head
            if case .stored = done.outcome { stored = true }
        } else {
            _ = worker.withCache(cache.routeCache.unsafelyUnwrapped) { $0.abandon(fill) }
            cache.body = []
        }
        worker.fillEnded(fill, stored: stored)
    }

    /// The exchange ends: a fill that did not complete releases its waiters (they go upstream
    /// themselves), and an unsafe method's success invalidates the URL (RFC 9111 4.4).
    func cacheExchangeEnded(_ end: ExchangeEnd) {
        guard cache.active else { return }
        if let fill = cache.fill.take() {
            _ = worker.withCache(cache.routeCache.unsafelyUnwrapped) { $0.abandon(fill) }
            worker.fillEnded(fill, stored: false)
        }
        if case .completed = end, !request.method.isGetOrHead, let head = response {
            // In the route's cache as it is now (a reload since the lookup made a new one), if any.
            if let current = worker.caches[routeRef.config.name] {
                _ = worker.withCache(current) { $0.invalidate(method: request.method, url: cache.key.unsafelyUnwrapped.url, response: head) }
            }
        }
    }

    /// `.deliverCachedResponse`: the stored head (or the 304 the client's own condition asks
    /// for) with `Age` and `Cache-Status`, then the stored body, written whole (at most
    /// `max_object`); an upstream that answered a revalidation with 304 goes back to the pool.
    func deliverCached() {
        guard cache.active, let hit = cache.hit.take() else { return }
        releaseUpstream(bodyReadToEnd: true)
        let head = hit.notModified ? ResponseCache.notModifiedHead(hit.head) : hit.head
        if cache.status == nil { cache.status = hit.status }   // written with the head
        let framing = head.framing(requestMethod: request.method)
        response = head
        responseStatus = head.status
        responseStartedAt = EventLoop.nowNanos()
        responseFraming = framing
        responseOut = framing == .none ? .none : .length
        clientKeepAlive = machine.clientKeepAlive(requestKeepAlive: request.keepAlive, clientContinues: client.clientContinues)
        writeResponseHead(framing: framing)
        if framing != .none {
            // Large bodies by reference (no copy into the output); small ones, from the entry's
            // block, join the head's send.
            if let large = hit.largeBody { clientStream.writeReference(large) } else { hit.withBody { clientStream.write($0) } }
            bytesOut += UInt64(hit.bodyCount)
        }
        run(machine.responseComplete())
    }

    /// `BodyPump.relay`'s tee: `n` bytes of `src`'s input copied into the body kept for the
    /// store, up to `max_object` (past it, the copy stops and is dropped).
    func teeResponseBody(_ src: Stream, _ n: Int) {
        guard cache.teeing else { return }
        if cache.body.count + n <= cache.maxObject {
            src.copyInput(n, appendingTo: &cache.body)
        } else {
            cache.teeing = false
            cache.body = []
        }
    }
}
