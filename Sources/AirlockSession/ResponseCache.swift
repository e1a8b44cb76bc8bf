public import AirlockWire

/// A shared HTTP cache in memory (RFC 9111) for a route's GET and HEAD requests (issue #21), as
/// pure bookkeeping: no I/O, no clock of its own (every call takes `now`, seconds since the
/// epoch), so the executor asks and acts, and every rule is tested without a socket.
///
/// - Keys: the absolute URL (GET and HEAD share it) and the variant of the request fields the
///   stored response's `Vary` names (`CacheKey`). One `Vary` list per URL, the latest stored:
///   a response varying on other fields replaces the URL's variants.
/// - Lookup (`lookup`): a fresh response is a hit (`Age` set); a stale one, or any when the
///   request says `no-cache` / `max-age=0` (or the response said `no-cache`), is revalidated
///   with `If-None-Match` / `If-Modified-Since`; a miss goes upstream. Requests with `Range`
///   bypass the cache; other methods are `fwd=method`.
/// - Request collapsing: the first forward for a key is its fill; lookups of that key meanwhile
///   `wait`. When the fill ends (`complete`, `abandon`) its waiters are told how many they
///   were: after a store they look up again (and hit), otherwise they go upstream themselves
///   (`lookup(…, joinFill: false)`), never waiting on each other in turn.
/// - Storing (`complete`): only what `refusal(request:response:)` allows, what the caller says
///   passed the route's validation, and at most `maxObject` bytes; a 304 freshens the stored
///   response (4.3.4).
/// - Unsafe methods invalidate (`invalidate`, 4.4).
/// - Memory (AFAutoPurgingImageCache): once the stored bytes pass `memory`, the least recently
///   used entries go until they are at most `purgeTo`.
public struct ResponseCache {
    public struct Limits: Sendable, Equatable {
        /// Bytes stored before a purge.
        public var memory: Int
        /// Bytes left after a purge.
        public var purgeTo: Int
        /// The largest entry stored.
        public var maxObject: Int

        public init(memory: Int = 100 << 20, purgeTo: Int = 60 << 20, maxObject: Int = 4 << 20) {
            self.memory = memory
            self.purgeTo = purgeTo
            self.maxObject = maxObject
        }
    }

    public struct Counters: Sendable, Equatable {
        public var hits = 0
        public var hitBytes = 0        // body bytes served from memory
        public var misses = 0
        public var revalidations = 0   // forwards of a stored response, conditional when it had a validator
        public var refreshed = 0       // ... answered 304 and freshened
        public var stores = 0
        public var evictions = 0       // purged for memory
        public var invalidations = 0   // removed by an unsafe method or by DELETE /cache
        public var collapsed = 0       // lookups that waited for another's fill
        public init() {}
    }

    /// A response served from memory.
    /// A class of constants, as `Fill` is: `Lookup` and `Completion`, which may carry one, stay
    /// a few words long (with the head and body inline they were 117 and 169 bytes, copied
    /// with `memcpy` at each step of every lookup, a miss's too).
    public final class Hit: @unchecked Sendable {   // (its entry is immutable but for a counter, on its worker's loop)
        /// The stored head with `Age` set (and `Content-Length` of the body).
        public let head: ResponseHead
        /// The entry served: its body is written from it (`withBody`, `largeBody`).
        let entry: Entry
        public let status: CacheStatus
        /// The client's own conditional (`If-None-Match`, else `If-Modified-Since`) holds for
        /// it: answer `notModifiedHead(head)` instead (RFC 9111 4.3.2).
        public let notModified: Bool

        /// The body (a copy, when it is in the entry's block).
        public var body: [UInt8] { entry.body }
        public var bodyCount: Int { entry.bodyCount }
        /// A body too large for the entry's block, to write by reference; nil: `withBody`.
        public var largeBody: [UInt8]? { entry.largeBody }
        /// Calls `body` with the body's bytes, in place.
        public func withBody<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { entry.withBody(body) }

        init(head: ResponseHead, entry: Entry, status: CacheStatus, notModified: Bool) {
            self.head = head
            self.entry = entry
            self.status = status
            self.notModified = notModified
        }
    }

    /// An upstream request the cache takes part in: what to add to it and what to do with its answer.
    /// A class of constants: the exchange holds it from lookup to store, and passing it on is a
    /// reference, not a copy of its key's strings and its fields (the miss path copied it a
    /// dozen times). Equal when every property is.
    public final class Fill: Sendable, Equatable {
        public let key: CacheKey
        /// `If-None-Match` / `If-Modified-Since` of the stored response (empty for a miss).
        public let conditionalFields: [CacheField]
        public let requestTime: Int64
        /// Why it goes forward (`Cache-Status`'s `fwd`).
        public let forward: CacheStatus.Forward
        /// A stored response is being validated.
        public let revalidates: Bool
        /// Registered for collapsing (and so its waiters must be released).
        public let collapses: Bool
        /// A GET whose response may be stored.
        public let stores: Bool

        init(key: CacheKey, conditionalFields: [CacheField], requestTime: Int64, forward: CacheStatus.Forward,
             revalidates: Bool, collapses: Bool, stores: Bool) {
            self.key = key
            self.conditionalFields = conditionalFields
            self.requestTime = requestTime
            self.forward = forward
            self.revalidates = revalidates
            self.collapses = collapses
            self.stores = stores
        }

        public static func == (a: Fill, b: Fill) -> Bool {
            a.key == b.key && a.conditionalFields == b.conditionalFields && a.requestTime == b.requestTime
                && a.forward == b.forward && a.revalidates == b.revalidates && a.collapses == b.collapses && a.stores == b.stores
        }

        /// The request as sent upstream (`upstreamHeaders`), or nil when that is the client's
        /// own, unchanged (so the caller sends it without a copy).
        public func upstreamRequest(_ client: RequestHead) -> RequestHead? {
            guard changesHeaders(client.headers) else { return nil }
            var out = client
            out.headers = upstreamHeaders(client.headers)
            return out
        }

        private func changesHeaders(_ client: HTTPHeaders) -> Bool {
            guard stores || !conditionalFields.isEmpty else { return false }
            return !conditionalFields.isEmpty || client.contains(.ifNoneMatch) || client.contains(.ifModifiedSince)
        }

        /// The request head's fields as sent upstream: a fill that may store, or validates a
        /// stored response, drops the client's own `If-None-Match` and `If-Modified-Since` (a
        /// 304 to the client's copy could not be stored, and the cache answers the client's
        /// condition itself) and adds the stored response's validators.
        public func upstreamHeaders(_ client: HTTPHeaders) -> HTTPHeaders {
            guard stores || !conditionalFields.isEmpty else { return client }
            // Nothing to drop or add (a miss without the client's own conditional): unchanged, uncopied.
            if conditionalFields.isEmpty && !client.contains(.ifNoneMatch) && !client.contains(.ifModifiedSince) { return client }
            var out = client
            out.removeAll(.ifNoneMatch)
            out.removeAll(.ifModifiedSince)
            for field in conditionalFields { out.append(name: field.name, value: field.value) }
            return out
        }
    }

    public enum Lookup: Sendable {
        case hit(Hit)
        /// Go upstream with `fill.conditionalFields` added; then `complete` or `abandon`.
        case forward(Fill)
        /// Another request is filling this key: wait for it, then look up again.
        case wait(CacheKey)
        /// The cache takes no part; the response carries this status.
        case bypass(CacheStatus)
        /// `Cache-Control: only-if-cached` and nothing usable stored: answer 504 (RFC 9111 5.2.1.7).
        case onlyIfCached(CacheStatus)
    }

    public enum Outcome: Sendable {
        case stored
        case notStored(CacheRefusal)
        /// A 304 freshened the stored response: serve it.
        case refreshed(Hit)
    }

    /// `complete`'s answer: what became of the response, the filler's `Cache-Status`, and how
    /// many requests waited (after `stored`/`refreshed` they look up again; otherwise they go
    /// upstream with `joinFill: false`).
    public struct Completion: Sendable {
        public var outcome: Outcome
        public var status: CacheStatus
        public var waiters: Int
        /// Stored or refreshed, and the filler's own conditional holds for it: answer it
        /// `notModifiedHead` (its conditional was not sent upstream).
        public var notModified = false
    }

    public let limits: Limits
    /// Heuristic freshness (RFC 9111 4.2.2), percent of `Date` − `Last-Modified`; nil: none.
    public let heuristicPercent: Int?
    public private(set) var counters = Counters()
    /// Bytes stored (entries' `bytes`), at most `limits.memory` after every call.
    public private(set) var bytes = 0
    /// How many entries a purge drops at a time beyond those that bring the stored bytes back
    /// within `memory`; the rest of the way to `purgeTo` is left to `purgeStep`, which the
    /// executor calls on later loop turns. A purge of tens of thousands of small entries at
    /// once held the worker's loop for 10-30 ms (every connection on it waited); nginx's cache
    /// manager deletes at most `manager_files` (100) entries per turn for the same reason.
    /// `.max` (the default): the whole purge at once, in the store that passed `memory`.
    public var purgeSlice = Int.max
    /// A purge to `purgeTo` is under way (it began when the stored bytes passed `memory`).
    public private(set) var purging = false
    /// Emptied tables (`retireAll`) freed a slice per `purgeStep`.
    @usableFromInline private(set) var retired: [EntryTable] = []

    /// The entries by their keys' hashes (a 64-bit keyed hash, no text to retain, release or
    /// compare in the index), each entry confirming its own key (`entry(for:)`).
    private var entries = EntryTable()
    /// Per URL whose stored responses vary: their `Vary` names (lower-case, in order) and the
    /// variants stored, keyed by the URL's key without a variant (`CacheKey(url:)`, hashed once).
    /// A URL stored without `Vary` has one possible key, that one, and no state here: a lookup
    /// that finds no state uses it.
    private struct URLState {
        var vary: [String]
        var variants: [String] = []
    }
    private var urls: [CacheKey: URLState] = [:]
    /// The last dates the store read (`Facts`), by their text.
    private var dates = HTTPDateMemo()
    /// Keys being filled (by their hashes, as `FillID`), and how many lookups wait on each.
    private var fills = FillTable()

    public init(limits: Limits = Limits(), heuristicPercent: Int? = nil) {
        self.limits = limits
        self.heuristicPercent = heuristicPercent
    }

    public var count: Int { entries.count }

    /// Keys with a fill in flight.
    public var fillsInFlight: Int { fills.count }

    // MARK: lookup

    /// What to do with a request for `url` (from `CacheKey.url`). `joinFill: false` for a
    /// request released by a fill that stored nothing: it goes upstream on its own.
    public mutating func lookup(url: String, request: RequestHead, now: Int64, joinFill: Bool = true) -> Lookup {
        lookup(key: CacheKey(url: url), request: request, now: now, joinFill: joinFill)
    }

    /// `lookup(url:…)` with the URL's key (`CacheKey.of`, no variant) already made.
    public mutating func lookup(key base: CacheKey, request: RequestHead, now: Int64, joinFill: Bool = true) -> Lookup {
        guard request.method.isGetOrHead else { return .bypass(CacheStatus(fwd: .method)) }
        guard !request.headers.contains(.range) else { return .bypass(CacheStatus(fwd: .bypass)) }
        let names = urls.isEmpty ? nil : urls[base]?.vary
        let key = names.map { base.variant(CacheKey.variant(names: $0, request: request)) } ?? base
        let stores = request.method.isGet
        let asked = CacheControl(request.headers)

        guard let entry = entry(for: key) else {
            counters.misses += 1
            let forward: CacheStatus.Forward = names == nil ? .uriMiss : .varyMiss
            if asked.onlyIfCached { return .onlyIfCached(CacheStatus(fwd: forward, detail: .onlyIfCached)) }
            return claim(key, forward: forward, revalidates: false, conditional: [],
                         now: now, stores: stores, collapses: stores && joinFill, mayWait: joinFill)
        }
        let age = entry.age(now: now)
        let lifetime = entry.lifetime
        let pragmaNoCache = !request.headers.contains(.cacheControl)
            && request.headers.listElements(name: "pragma").contains { $0.lowercased() == "no-cache" }
        // max-age=0 always revalidates (a browser's reload), though RFC 9111 would let an age-0 response through.
        let requestForces = asked.noCache || pragmaNoCache || asked.maxAge.map { $0 == 0 || age > $0 } == true
            || asked.minFresh.map { lifetime - age < $0 } == true
        let responseForces = entry.alwaysRevalidate
        if lifetime > age && !requestForces && !responseForces {
            counters.hits += 1
            counters.hitBytes += entry.bodyCount
            entries.touch(key.hash64)   // the most recently used
            entry.countHit()
            let served = Self.served(entry, age: age)
            // (The fields the condition reads, `ETag`, `Last-Modified` and `Date`, are served ones.)
            return .hit(Hit(head: served, entry: entry, status: CacheStatus(hit: true, ttl: lifetime - age),
                            notModified: Self.notModified(request: request, stored: served)))
        }
        let forward: CacheStatus.Forward = lifetime > age && !responseForces ? .request : .stale
        if asked.onlyIfCached { return .onlyIfCached(CacheStatus(fwd: forward, detail: .onlyIfCached)) }
        counters.revalidations += 1
        return claim(key, forward: forward, revalidates: true,
                     conditional: Self.conditionalFields(for: entry.head.headers), now: now,
                     stores: stores, collapses: stores && joinFill, mayWait: joinFill)
    }

    private mutating func claim(_ key: CacheKey, forward: CacheStatus.Forward, revalidates: Bool, conditional: [CacheField],
                                now: Int64, stores: Bool, collapses: Bool, mayWait: Bool) -> Lookup {
        assert(!collapses || mayWait, "a fill that collapses can be waited on")
        if collapses {
            // One hash and probe: the key's fill counted one more waiter, or registered (0 waiters).
            // (A fill that collapses may always be waited on: `collapses` implies `mayWait`.)
            if fills.joinOrRegister(key.hash64) {
                counters.collapsed += 1
                return .wait(key)
            }
        } else if mayWait, fills.joinIfInFlight(key.hash64) {
            counters.collapsed += 1
            return .wait(key)
        }
        return .forward(Fill(key: key, conditionalFields: conditional, requestTime: now, forward: forward,
                             revalidates: revalidates, collapses: collapses, stores: stores))
    }

    /// The head `entry` is served with at `age`: the stored one without the fields it may have
    /// kept that are not forwarded (`notServed`: hop-by-hop fields, a received `Age`), dropped
    /// as it is made from the entry's block, and `Age` written afresh in the room left for it.
    static func served(_ entry: Entry, age: Int64) -> ResponseHead {
        var out = entry.head(dropping: notServed, reservingBytes: 24, reservingEntries: 1)
        out.headers.append(name: "Age", value: String(age))
        return out
    }

    // MARK: the fill's answer

    /// The upstream answered the fill's request: store it, freshen the stored one (a 304), or
    /// not, and release the fill's waiters. `validated`: the route's response validation passed
    /// it (a rejected response is never stored). `body` is the whole decoded body.
    /// `fieldsChecked`: the caller's response filter found no `fieldRefusal` for this request
    /// and response (the rules that read fields only), so they are not checked again.
    /// `response` and `body` are read where they lie: the stored entry copies both into its one
    /// block (`Entry`; a body over `Entry.inlineBodyLimit` is kept as it is, beside the block,
    /// sharing the caller's array).
    public mutating func complete(_ fill: Fill, request: RequestHead, response: borrowing ResponseHead, body: borrowing [UInt8],
                                  validated: Bool, now: Int64, fieldsChecked: Bool = false) -> Completion {
        let waiters = release(fill)
        var status = CacheStatus(fwd: fill.forward, fwdStatus: response.status)
        if response.status == 304 && fill.revalidates {
            guard let entry = entry(for: fill.key) else {
                status.detail = .refused(.entryGone)
                return Completion(outcome: .notStored(.entryGone), status: status, waiters: waiters)
            }
            guard Self.notModifiedMatches(response.headers, stored: entry.head.headers) else {
                removeEntry(fill.key)
                status.detail = .refused(.notModifiedMismatch)
                return Completion(outcome: .notStored(.notModifiedMismatch), status: status, waiters: waiters)
            }
            var head = entry.head
            head.headers = Self.freshened(head.headers, with: response.headers)
            let facts = Facts(head, responseTime: now, heuristicPercent: heuristicPercent, dates: &dates)
            let fresh = Entry.make(key: fill.key, head: head, body: entry.body, requestTime: fill.requestTime, responseTime: now,
                                   initialAge: Self.initialAge(response.headers, requestTime: fill.requestTime, responseTime: now),
                                   lifetime: facts.lifetime, alwaysRevalidate: facts.control.noCache, hits: entry.hits)
            // Its fields changed, and so its bytes: bounded as a store's are. One grown past
            // `max_object` is served this once and no longer kept.
            if fresh.bytes <= limits.maxObject {
                put(fill.key, fresh)
                purgeIfNeeded()
            } else {
                removeEntry(fill.key)
            }
            counters.refreshed += 1
            let notModified = Self.notModified(request: request, stored: head)
            let hit = Hit(head: Self.served(fresh, age: fresh.age(now: now)), entry: fresh, status: status,
                          notModified: notModified)
            return Completion(outcome: .refreshed(hit), status: status, waiters: waiters, notModified: notModified)
        }
        let names = response.headers.contains(.vary) ? response.headers.listElements(name: "vary").map { $0.lowercased() } : []
        let base = fill.key.base
        let key = names.isEmpty ? base : base.variant(CacheKey.variant(names: names, request: request))
        // The response's facts, read once: the rules, the entry's lifetime and its age use them.
        let facts = Facts(response, responseTime: now, heuristicPercent: heuristicPercent, dates: &dates)
        if let refusal = Self.refusal(request: request, response: response, facts: facts, checkFields: !fieldsChecked)
            ?? (validated ? nil : .rejected) {
            status.detail = .refused(refusal)
            return Completion(outcome: .notStored(refusal), status: status, waiters: waiters)
        }
        let initialAge = Self.initialAge(response.headers, date: facts.date, requestTime: fill.requestTime, responseTime: now)
        // The stored head is the response's, its fields replaced only when they must be
        // (`storedFields`); either way the entry copies them into its block, read in place.
        let hasBody = response.status != 204
        if let fields = Self.storedFields(response.headers, bodyCount: body.count, hasBody: hasBody) {
            return store(key, base: base, names: names, request: request, response: response, fields: fields, body: body,
                         hasBody: hasBody, requestTime: fill.requestTime, now: now, initialAge: initialAge, facts: facts, status: status, waiters: waiters)
        }
        return store(key, base: base, names: names, request: request, response: response, fields: response.headers, body: body,
                     hasBody: hasBody, requestTime: fill.requestTime, now: now, initialAge: initialAge, facts: facts, status: status, waiters: waiters)
    }

    /// `complete`'s store, once the rules allowed it: the entry is made from the response's
    /// status line and `fields` (its own or their replacement) where they lie (`borrowing`: the
    /// caller keeps its head, and nothing is copied before the entry's block), within `max_object`.
    private mutating func store(_ key: CacheKey, base: CacheKey, names: [String], request: RequestHead,
                                response: borrowing ResponseHead, fields: borrowing HTTPHeaders, body: borrowing [UInt8],
                                hasBody: Bool, requestTime: Int64, now: Int64, initialAge: Int64, facts: Facts,
                                status: consuming CacheStatus, waiters: Int) -> Completion {
        // The entry's bytes, as it would be stored, against `max_object`.
        guard Self.cost(blockBytes: Entry.blockBytes(key: key, reason: response.reason, headers: fields), body: body.count)
                <= limits.maxObject else {
            status.detail = .refused(.tooLarge)
            return Completion(outcome: .notStored(.tooLarge), status: status, waiters: waiters)
        }
        let known = urls.isEmpty ? nil : urls[base]?.vary
        if names.isEmpty {
            if known != nil { removeURL(base) }   // it varied before: its variants go
        } else if known != names {
            removeURL(base)                       // its entries varied otherwise, or not at all
            urls[base] = URLState(vary: names)
        }
        let notModified = Self.notModified(request: request, storedHeaders: fields)
        put(key, Entry.make(key: key, version: response.version, status: response.status, reason: response.reason, headers: fields,
                            declaredFraming: hasBody ? .length(UInt64(body.count)) : .none, body: body,
                            requestTime: requestTime, responseTime: now, initialAge: initialAge,
                            lifetime: facts.lifetime, alwaysRevalidate: facts.control.noCache))
        counters.stores += 1
        status.stored = true
        purgeIfNeeded()
        return Completion(outcome: .stored, status: status, waiters: waiters, notModified: notModified)
    }

    /// The fill's upstream request failed (no usable response): its waiters go upstream themselves.
    public mutating func abandon(_ fill: Fill) -> Int { release(fill) }

    private func entry(for key: CacheKey) -> Entry? {
        guard let e = entries.peek(key.hash64), e.matches(key) else { return nil }
        return e
    }

    private mutating func release(_ fill: Fill) -> Int {
        guard fill.collapses else { return 0 }
        return fills.remove(fill.key.hash64) ?? 0
    }

    /// What an entry holds besides its block's bytes and its body: the block's own header
    /// (`EntryHeader`) and the allocator's rounding, its slot in the LRU's arrays and the index.
    /// Measured when an entry was five objects (/tmp/dlbench/rss.swift, 640 MiB of 100-byte
    /// bodies through a 64 MiB cache): resident memory grew ~1 KiB per entry where its text
    /// counted ~200 B. One block holds less beside its bytes; the figure is kept, on the safe side.
    public static let entryOverhead = 512

    /// Bytes an entry counts against `memory` (its `bytes`): its body, its block before the body
    /// (key, reason phrase and the head's fields, `Entry.blockBytes`) and `entryOverhead`, so
    /// many small entries cannot hold many times `memory` in the process.
    static func cost(blockBytes: Int, body: Int) -> Int { body + blockBytes + entryOverhead }

    // MARK: storage

    /// The entry into the table (replacing the key's, or another key's with the same hash),
    /// its bytes counted.
    private mutating func put(_ key: CacheKey, _ entry: consuming Entry) {
        bytes += entry.bytes
        if !key.variant.isEmpty {
            let base = key.base
            if urls[base]?.variants.contains(key.variant) == false { urls[base]?.variants.append(key.variant) }
        }
        if let old = entries.updateValue(entry, forKey: key.hash64) {
            bytes -= old.bytes
            // Another key with the same hash (`EntryTable`): its entry is replaced, and forgotten.
            if old.hasVariant && !old.matches(key) { forget(old.key) }
        }
    }

    @discardableResult
    private mutating func removeEntry(_ key: CacheKey) -> Bool {
        guard entry(for: key) != nil, let old = entries.remove(key.hash64) else { return false }
        bytes -= old.bytes
        forget(key)
        return true
    }

    /// Drops a removed variant from its URL's state (a key without a variant has none).
    private mutating func forget(_ key: CacheKey) {
        guard !key.variant.isEmpty else { return }
        let base = key.base
        guard var state = urls[base] else { return }
        state.variants.removeAll { $0 == key.variant }
        urls[base] = state.variants.isEmpty ? nil : state
    }

    /// Removes every variant of the URL of `base` (a key without a variant), or its one entry
    /// when it does not vary; returns how many.
    @discardableResult
    private mutating func removeURL(_ base: CacheKey) -> Int {
        guard let state = urls.removeValue(forKey: base) else { return removeEntry(base) ? 1 : 0 }
        var removed = 0
        for variant in state.variants where removeEntry(base.variant(variant)) { removed += 1 }
        return removed
    }

    /// Past `memory`, the least recently used entries go until `purgeTo` is reached: at once
    /// down to `memory` (the bound holds after every call), the rest `purgeSlice` entries at a
    /// time, on this call (the whole way with the default slice) or on later `purgeStep`s.
    private mutating func purgeIfNeeded() {
        if bytes > limits.memory { purging = true }
        guard purging else { return }
        evict(atMost: purgeSlice == .max ? .max : 0)
    }

    /// One slice of the work under way: at most `purgeSlice` entries freed, those `retireAll`
    /// left first, then least recently used ones while the stored bytes are above `purgeTo`.
    /// True while more remain (`hasWork`).
    @discardableResult
    public mutating func purgeStep() -> Bool {
        var budget = purgeSlice
        while budget > 0, let last = retired.indices.last {
            if retired[last].removeLeastRecent() != nil { budget -= 1 }
            if retired[last].count == 0 { retired.removeLast() }
        }
        if purging && budget > 0 { evict(atMost: budget) }
        return hasWork
    }

    /// A purge is under way, or entries `retireAll` left wait to be freed.
    /// Inlined: the executor asks after every call to the cache (`Worker.withCache`), and the
    /// call copied the whole cache (344 bytes) out of its class to ask it.
    @inlinable public var hasWork: Bool { purging || !retired.isEmpty }

    /// Entries `retireAll` left that are not freed yet.
    public var retiredCount: Int { retired.reduce(0) { $0 + $1.count } }

    /// Drops least recently used entries while above `purgeTo`: every one needed to be within
    /// `memory`, and `extra` more; the purge ends once `purgeTo` is reached.
    private mutating func evict(atMost extra: Int) {
        var dropped = 0
        while bytes > limits.purgeTo {
            if bytes <= limits.memory {
                guard dropped < extra else { break }
                dropped += 1
            }
            guard let entry = entries.removeLeastRecent() else { break }
            bytes -= entry.bytes
            if entry.hasVariant { forget(entry.key) }
            counters.evictions += 1
        }
        purging = bytes > limits.purgeTo
    }

    // MARK: invalidation and admin

    /// RFC 9111 4.4: a non-error (2xx, 3xx) response to an unsafe method (anything but GET,
    /// HEAD, OPTIONS, TRACE) invalidates the target URL, and the `Location` and
    /// `Content-Location` URLs when they are on the same origin (an absolute URL with the same
    /// scheme, host and port, or an absolute path). Returns the entries removed.
    @discardableResult
    public mutating func invalidate(method: Method, url: String, response: ResponseHead) -> Int {
        switch method {
        case .get, .head, .options, .trace: return 0
        default: break
        }
        guard (200...399).contains(response.status) else { return 0 }
        var urls = [url]
        let origin = CacheKey.origin(of: url)
        for name in ["location", "content-location"] {
            guard let value = response.headers.first(name: name), let other = Self.sameOrigin(value, origin: origin) else { continue }
            urls.append(other)
        }
        var removed = 0
        for u in urls { removed += removeURL(CacheKey(url: u)) }
        counters.invalidations += removed
        return removed
    }

    /// `value` as a URL of `origin`, or nil when it names another origin or is a relative path.
    static func sameOrigin(_ value: String, origin: Substring) -> String? {
        if value.hasPrefix("/") && !value.hasPrefix("//") { return String(origin) + value }
        let lower = value.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return nil }
        let scheme: Scheme = lower.hasPrefix("https") ? .https : .http
        let rest = value.dropFirst(scheme.rawValue.count + 3)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var host = authority.lowercased()
        var port: UInt16?
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            guard let p = UInt16(host[host.index(after: colon)...]) else { return nil }
            port = p
            host = String(host[..<colon])
        }
        let path = rest[authorityEnd...]
        let url = CacheKey.absolute(scheme: scheme, host: host, port: port, path: path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : String(path)))
        return CacheKey.origin(of: url) == origin ? url : nil
    }

    /// `DELETE /cache[?url=…]`: removes `url`'s variants, or everything; returns how many.
    @discardableResult
    public mutating func remove(url: String?) -> Int {
        let removed: Int
        if let url {
            removed = removeURL(CacheKey(url: url))
        } else {
            removed = entries.count
            retireAll()
        }
        counters.invalidations += removed
        return removed
    }

    /// Empties the cache at once (nothing is found any more, nothing counts against `memory`).
    /// With a purge slice the entries are freed a slice per `purgeStep` (freeing tens of
    /// thousands at once held the loop ~45 ms); without, here.
    public mutating func retireAll() {
        if purgeSlice == .max {
            while entries.removeLeastRecent() != nil {}
        } else if entries.count > 0 {
            retired.append(entries)
            entries = EntryTable()
        }
        urls = [:]
        bytes = 0
        purging = false
    }

    /// One row of `GET /cache`.
    public struct Listing: Sendable, Equatable {
        public var url: String
        public var variant: String
        public var status: Int
        public var bytes: Int
        public var hits: Int
        public var age: Int64
        public var fresh: Bool
    }

    /// `GET /cache`: the `limit` most recently used entries (all by default), most recent first.
    /// The walk copies nothing but each row (on the worker's loop: listing a large cache whole
    /// by copying every entry out held the loop for tens of milliseconds).
    public func listing(now: Int64, limit: Int = .max) -> [Listing] {
        var rows: [Listing] = []
        rows.reserveCapacity(Swift.min(limit, entries.count))
        guard limit > 0 else { return rows }
        entries.forEachMostRecent { e in
            let age = e.age(now: now)
            rows.append(Listing(url: e.url, variant: e.variant, status: e.status, bytes: e.bytes, hits: e.hits,
                                age: age, fresh: e.lifetime > age))
            return rows.count < limit
        }
        return rows
    }
}
