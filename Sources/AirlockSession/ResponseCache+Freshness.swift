public import AirlockWire

/// RFC 9111's rules for one response, with no state: may a shared cache store it (3, 3.5),
/// how long it is fresh (4.2.1), how old it is (4.2.3), how a stale one is validated (4.3.1)
/// and how a 304 freshens it (4.3.4).
extension ResponseCache {
    /// Statuses a cache may store without explicit freshness (RFC 9110 15.1's "heuristically
    /// cacheable"), though with no heuristic configured they are stored only to be revalidated.
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// `heuristicallyCacheable.contains(status)` without hashing (every store asks, twice).
    public static func isHeuristicallyCacheable(_ status: Int) -> Bool {
        switch status {
        case 200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501: true
        default: false
        }
    }

    /// Why a response is not stored; nil when a shared cache may store it. The rules, in order:
    /// - GET only: a HEAD response has no body to serve a later GET (a HEAD is served from a
    ///   stored GET instead); other methods are not cached.
    /// - a final status the cache understands: not 1xx, not 206 (partial content is not
    ///   stored) and not 304 (it freshens a stored response instead);
    /// - no `no-store` in the request or the response;
    /// - not `private` (a shared cache);
    /// - a request with `Authorization` only if the response says `public`, `s-maxage` or
    ///   `must-revalidate` (3.5);
    /// - no `Set-Cookie`: RFC 9111 allows storing it (7.3), but a shared cache replaying one
    ///   client's cookie to every other client leaks a session; nginx and Varnish refuse it
    ///   by default for the same reason, and so does Airlock;
    /// - not `Vary: *` (it never matches a later request, 4.1);
    /// - explicit freshness (`s-maxage`, `max-age`, `Expires`), `public`, or a heuristically
    ///   cacheable status;
    /// - and something to gain: a freshness lifetime above 0 or a validator to revalidate with.
    public static func refusal(request: RequestHead, response: ResponseHead, heuristicPercent: Int? = nil) -> CacheRefusal? {
        let facts = Facts(response, responseTime: 0, heuristicPercent: heuristicPercent)
        return refusal(request: request, response: response, facts: facts)
    }

    /// `refusal` over a response's facts already read (`complete` reads them once, at the
    /// response's own time, and keeps them for the entry).
    /// `checkFields: false`: the field rules (`fieldRefusal`) were checked already.
    static func refusal(request: RequestHead, response: ResponseHead, facts: Facts, checkFields: Bool = true) -> CacheRefusal? {
        let rcc = facts.control
        if checkFields, let refusal = fieldRefusal(request: request, response: response, responseControl: rcc) { return refusal }
        let explicit = rcc.sMaxAge != nil || rcc.maxAge != nil || facts.hasExpires
        guard explicit || rcc.isPublic || isHeuristicallyCacheable(response.status) else { return .status }
        if facts.lifetime == 0, !hasValidator(response.headers) { return .noFreshness }
        return nil
    }

    /// What the store rules read from a response, each once: its `Cache-Control`, its `Date`
    /// (or the response time when it has none), whether it has `Expires`, and its freshness
    /// lifetime (`freshnessLifetime`).
    struct Facts {
        let control: CacheControl
        let date: Int64
        let hasExpires: Bool
        let lifetime: Int64

        /// `borrowing`: an initializer's parameter is otherwise consumed, and so copied by a
        /// caller that goes on using the head (`complete` moves it into the entry afterwards).
        init(_ response: borrowing ResponseHead, responseTime: Int64, heuristicPercent: Int?) {
            var dates = HTTPDateMemo()
            self.init(response, responseTime: responseTime, heuristicPercent: heuristicPercent, dates: &dates)
        }

        /// Dates read through `dates` (the cache's memo of the last two: `Date` and
        /// `Last-Modified` are nearly always the texts of the response before).
        init(_ response: borrowing ResponseHead, responseTime: Int64, heuristicPercent: Int?, dates: inout HTTPDateMemo) {
            control = CacheControl(response.headers)
            date = response.headers.firstDate(.date, memo: &dates) ?? responseTime
            // The last `Expires` and how many (none: one test of the head's known fields).
            let expires = response.headers.lastIndex(.expires)
            hasExpires = expires != nil
            lifetime = Self.lifetime(response, control: control, date: date, expires: expires, heuristicPercent: heuristicPercent,
                                     dates: &dates)
        }

        private static func lifetime(_ response: ResponseHead, control cc: CacheControl, date: Int64,
                                     expires: (index: Int, count: Int)?, heuristicPercent: Int?,
                                     dates: inout HTTPDateMemo) -> Int64 {
            if let s = cc.sMaxAge { return s }
            if let m = cc.maxAge { return m }
            if let expires {
                guard expires.count == 1, let at = response.headers.date(at: expires.index) else { return 0 }
                return max(0, at - date)
            }
            if let percent = heuristicPercent, isHeuristicallyCacheable(response.status),
               let modified = response.headers.firstDate(.lastModified, memo: &dates),
               modified < date {
                return (date - modified) * Int64(percent) / 100
            }
            return 0
        }
    }

    /// The rules of `refusal` that read fields only (no dates, no freshness): what a response
    /// filter can check cheaply on the head before the body is copied for the store.
    public static func fieldRefusal(request: RequestHead, response: ResponseHead) -> CacheRefusal? {
        fieldRefusal(request: request, response: response, responseControl: CacheControl(response.headers))
    }

    /// `fieldRefusal` over the response's `Cache-Control` already parsed (`refusal` reads it too).
    static func fieldRefusal(request: RequestHead, response: ResponseHead, responseControl rcc: CacheControl) -> CacheRefusal? {
        guard request.method.isGet else { return .method }
        guard response.status >= 200, response.status != 206, response.status != 304 else { return .status }
        let qcc = CacheControl(request.headers)
        if rcc.noStore || qcc.noStore { return .noStore }
        if rcc.isPrivate { return .private }
        if !(rcc.isPublic || rcc.sMaxAge != nil || rcc.mustRevalidate), request.headers.contains(.authorization) {
            return .authorization
        }
        if response.headers.contains(.setCookie) { return .setCookie }
        if response.headers.containsToken(.vary, "*") { return .varyStar }
        return nil
    }

    /// Freshness lifetime in seconds for a shared cache (4.2.1): `s-maxage`, else `max-age`,
    /// else `Expires` minus `Date` (an invalid or repeated `Expires` means already expired; no
    /// `Date` counts as `responseTime`), else the heuristic when configured (that percent of
    /// `Date` minus `Last-Modified`, 4.2.2) for a heuristically cacheable status, else 0.
    public static func freshnessLifetime(_ response: ResponseHead, responseTime: Int64, heuristicPercent: Int? = nil) -> Int64 {
        Facts(response, responseTime: responseTime, heuristicPercent: heuristicPercent).lifetime
    }

    /// The `Date` field's time, or `responseTime` when it is absent or invalid.
    static func dateValue(_ headers: HTTPHeaders, responseTime: Int64) -> Int64 {
        headers.firstDate(.date) ?? responseTime
    }

    /// `current_age` (4.2.3):
    ///
    ///     apparent_age          = max(0, response_time - date_value)
    ///     corrected_age_value   = age_value + (response_time - request_time)
    ///     corrected_initial_age = max(apparent_age, corrected_age_value)
    ///     current_age           = corrected_initial_age + (now - response_time)
    ///
    /// `age_value` is the first member of `Age` (an invalid one is ignored, 5.1).
    public static func currentAge(_ headers: HTTPHeaders, requestTime: Int64, responseTime: Int64, now: Int64) -> Int64 {
        initialAge(headers, requestTime: requestTime, responseTime: responseTime) + max(0, now - responseTime)
    }

    /// `corrected_initial_age`, kept with a stored response (whose stored head has no `Age`).
    static func initialAge(_ headers: HTTPHeaders, requestTime: Int64, responseTime: Int64) -> Int64 {
        initialAge(headers, date: dateValue(headers, responseTime: responseTime), requestTime: requestTime, responseTime: responseTime)
    }

    /// `initialAge` with the response's `date_value` already read.
    static func initialAge(_ headers: HTTPHeaders, date: Int64, requestTime: Int64, responseTime: Int64) -> Int64 {
        let apparent = max(0, responseTime - date)
        let correctedAgeValue = ageValue(headers) + max(0, responseTime - requestTime)
        return max(apparent, correctedAgeValue)
    }

    /// The first member of `Age` as delta-seconds (all digits, else 0), read where it lies.
    static func ageValue(_ headers: HTTPHeaders) -> Int64 {
        guard headers.contains(.age) else { return 0 }   // nearly always: not even the generic call
        return headers.withFirstListElement(.age) { CacheControl.delta($0) } ?? 0
    }

    static func hasValidator(_ headers: HTTPHeaders) -> Bool {
        headers.contains(.etag) || headers.contains(.lastModified)
    }

    /// The fields of a conditional request validating a stored response (4.3.1): its entity tag
    /// in `If-None-Match` and its `Last-Modified` in `If-Modified-Since`, whichever it has.
    public static func conditionalFields(for stored: HTTPHeaders) -> [CacheField] {
        var out: [CacheField] = []
        if let tag = stored.first(.etag) { out.append(CacheField(name: "If-None-Match", value: tag)) }
        if let modified = stored.first(.lastModified) { out.append(CacheField(name: "If-Modified-Since", value: modified)) }
        return out
    }

    /// Whether the client's own conditional holds for a stored response (RFC 9111 4.3.2, RFC
    /// 9110 13.2.2): `If-None-Match` decides when present (`*`, or a tag weakly matching the
    /// stored `ETag`); otherwise `If-Modified-Since` holds when the stored `Last-Modified` (or,
    /// without one, its `Date`) is not later. An invalid condition is ignored.
    public static func notModified(request: RequestHead, stored: ResponseHead) -> Bool {
        notModified(request: request, storedHeaders: stored.headers)
    }

    /// `notModified` with the stored head's fields alone (all it reads).
    static func notModified(request: RequestHead, storedHeaders stored: borrowing HTTPHeaders) -> Bool {
        guard request.method.isGetOrHead else { return false }
        // Most requests have neither condition: one test says so.
        guard request.headers.contains(.ifNoneMatch) || request.headers.contains(.ifModifiedSince) else { return false }
        let inm = request.headers.values(.ifNoneMatch)
        if !inm.isEmpty {
            switch EntityTag.condition(inm.joined(separator: ", ")) {
            case .any: return true
            case .tags(let tags):
                guard let mine = stored.first(.etag).flatMap(EntityTag.init(parsing:)) else { return false }
                return tags.contains { $0.weakMatch(mine) }
            case .invalid: return false
            }
        }
        guard let since = request.headers.firstDate(.ifModifiedSince) else { return false }
        guard let modified = stored.firstDate(.lastModified) ?? stored.firstDate(.date) else { return false }
        return modified <= since
    }

    /// The 304 for a client whose condition holds (RFC 9110 15.4.5): the stored response's
    /// `Cache-Control`, `Content-Location`, `Date`, `ETag`, `Expires`, `Vary` and `Age` (and
    /// `Last-Modified` when it has no `ETag`), no body.
    public static func notModifiedHead(_ served: ResponseHead) -> ResponseHead {
        let h = served.headers
        let withoutETag = !h.contains(.etag)
        var headers = HTTPHeaders()
        for i in 0..<h.count {
            switch h.known(at: i) {
            case .cacheControl, .date, .etag, .expires, .vary, .age: break
            case .lastModified where withoutETag: break
            case .other where h.nameIs("content-location", at: i): break
            default: continue
            }
            headers.append(name: h.name(at: i), value: h.value(at: i))
        }
        return ResponseHead(version: served.version, status: 304, reason: "Not Modified", headers: headers,
                            keepAlive: served.keepAlive, declaredFraming: .none)
    }

    /// Whether a 304 is about this stored response (4.3.4): the same entity tag when the 304
    /// has one, else the same `Last-Modified` when it has one, else yes.
    static func notModifiedMatches(_ notModified: HTTPHeaders, stored: HTTPHeaders) -> Bool {
        if let tagText = notModified.first(.etag) {
            guard let tag = EntityTag(parsing: tagText), let mine = stored.first(.etag).flatMap(EntityTag.init(parsing:)) else {
                return false
            }
            return tag.weakMatch(mine) && tag.isWeak == mine.isWeak
        }
        if notModified.contains(.lastModified) {
            return stored.firstDate(.lastModified) == notModified.firstDate(.lastModified)
        }
        return true
    }

    /// A stored head freshened by a 304 (3.2, 4.3.4): every field the 304 carries replaces all
    /// of that name, except `Content-Length` and the fields a cache never stores.
    static func freshened(_ stored: HTTPHeaders, with notModified: HTTPHeaders) -> HTTPHeaders {
        let fields = storableFields(notModified)
        var out = stored
        var replaced: Set<String> = []
        for i in 0..<fields.count {
            let name = fields.name(at: i)
            if replaced.insert(name.lowercased()).inserted { out.removeAll(name: name) }
        }
        for i in 0..<fields.count { out.append(name: fields.name(at: i), value: fields.value(at: i)) }
        return out
    }

    /// The fields a store keeps in place of the response's own, or nil when it keeps them as
    /// they came, which is nearly always: its one `Content-Length` gave the body's length, and its
    /// `Connection` names no other field. Its hop-by-hop fields (`Connection: keep-alive`,
    /// `Keep-Alive`) and an `Age` then stay in the entry, and `served` leaves them out of every
    /// head it serves: RFC 9111 3.1 has them removed before forwarding, which "MAY be
    /// implemented by doing so before storage". Otherwise (a `Connection` naming other fields,
    /// chunked framing, no or another length) the entry keeps `storableFields` and the body's
    /// length. (Either way the entry copies the fields into its block; the stored head's
    /// framing is the body's length, or none for a 204.)
    static func storedFields(_ h: borrowing HTTPHeaders, bodyCount: Int, hasBody: Bool) -> HTTPHeaders? {
        let asItCame = !h.contains(.transferEncoding)
            && (hasBody ? h.hasSoleDecimal(.contentLength, bodyCount) : !h.contains(.contentLength))
        let connection = HopByHop.connectionTokens(h)
        if asItCame && connection.isEmpty { return nil }
        var fields = storableFields(h, connectionTokens: connection)
        if hasBody { fields.append(.contentLength, decimal: bodyCount) }
        return fields
    }

    /// The fields of a stored head that a served one leaves out: the hop-by-hop ones and
    /// `Age` (`neverStored`), but the stored head's `Content-Length`, which is its body's.
    static var notServed: KnownField.Set { neverStored.removing(.contentLength) }

    /// The kinds of field a stored head never keeps: the hop-by-hop ones (`Content-Length`
    /// among them) and `Age`.
    private static var neverStored: KnownField.Set { HopByHop.fields.inserting(.age) }

    /// The fields a cache keeps (3.1): not the hop-by-hop ones (`Connection` and what it names,
    /// `Keep-Alive`, `TE`, `Transfer-Encoding`, …), not `Content-Length` (the stored body's
    /// own length is written when served) and not `Age` (computed when served).
    static func storableFields(_ headers: HTTPHeaders) -> HTTPHeaders {
        storableFields(headers, connectionTokens: HopByHop.connectionTokens(headers))
    }

    /// `storableFields` with the head's `HopByHop.connectionTokens` already read.
    private static func storableFields(_ headers: borrowing HTTPHeaders, connectionTokens connection: [String]) -> HTTPHeaders {
        // Room for the `Content-Length` the store appends.
        if connection.isEmpty {   // nearly always (`Connection: keep-alive` names none): no call per field
            return headers.filtered(reserving: 36, dropping: neverStored)
        }
        return headers.filtered(reserving: 36) { i in
            headers.known(at: i) != .age && !HopByHop.isHopByHop(headers, at: i, connectionTokens: connection)
        }
    }
}
