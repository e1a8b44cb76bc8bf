@testable import AirlockSession
import AirlockWire
import XCTest

/// The cache's field readers (which go by `KnownField`) against the rules written out by name,
/// as they were before: seeded random heads whose fields are the ones the cache reads, in any
/// case, repeated, and next to near misses of equal length (`Cache-Controk`, `Agf`, `Varz`…).
final class CacheFieldReadersTests: XCTestCase {
    private let d1 = "Thu, 26 Nov 2026 10:00:00 GMT", d2 = "Wed, 25 Nov 2026 10:00:00 GMT", d3 = "Tue, 24 Nov 2026 09:00:00 GMT"
    private let t0: Int64 = 1_795_687_200

    private var responseFields: [(String, String)] {
        [("Cache-Control", "max-age=60"), ("cache-control", "s-maxage=5, public"), ("CACHE-CONTROL", "no-store"),
         ("Cache-Control", "private"), ("Cache-control", "must-revalidate"), ("Cache-Control", "no-cache, max-age=3"),
         ("Cache-Controk", "no-store"), ("Expires", d1), ("expires", "0"), ("EXPIRES", d2), ("Expiret", d1),
         ("Last-Modified", d3), ("LAST-MODIFIED", d2), ("last-modified", "soon"), ("Last-Modifiee", d3),
         ("ETag", "\"a\""), ("etag", "W/\"a\""), ("ETAG", "\"b\""), ("ETah", "\"a\""), ("Age", "10"), ("age", ", 7"),
         ("AGE", "x"), ("Age", "3, 4"), ("Agf", "3"), ("Vary", "Accept"), ("vary", " , *"), ("Varz", "*"),
         ("Set-Cookie", "a=b"), ("set-cookiE", "c"), ("Set-Cookid", "x"), ("Date", d2), ("date", "garbage"),
         ("DATE", d1), ("Datf", d1), ("Connection", "keep-alive"), ("Connection", "close, X-Hop"), ("X-Hop", "1"),
         ("Keep-Alive", "5"), ("Content-Location", "/a"), ("content-location", "/b"), ("Content-Locatioo", "/c"),
         ("Content-Type", "text/plain"), ("X-Y", "z")]
    }

    private var requestFields: [(String, String)] {
        [("Cache-Control", "no-store"), ("cache-control", "max-age=0"), ("Cache-Controk", "no-store"),
         ("Authorization", "x"), ("AUTHORIZATION", "y"), ("Authorizatioo", "z"), ("If-None-Match", "\"a\""),
         ("if-none-match", "*"), ("If-None-Match", "W/\"b\", \"c\""), ("If-None-Matcg", "*"), ("If-Modified-Since", d2),
         ("if-modified-since", d3), ("If-Modified-Since", "never"), ("If-Modified-Sincf", d1), ("Pragma", "no-cache"),
         ("Range", "bytes=0-"), ("X-Y", "z")]
    }

    private var seed: UInt64 = 2026

    private func next(_ n: Int) -> Int {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((seed >> 33) % UInt64(n))
    }

    private func headers(from pool: [(String, String)], upTo n: Int) -> HTTPHeaders {
        var h = HTTPHeaders()
        for _ in 0..<next(n + 1) {
            let (name, value) = pool[next(pool.count)]
            h.append(name: name, value: value)
        }
        return h
    }

    // MARK: the rules by name (the readers as they were)

    private func indices(_ h: HTTPHeaders, _ lowered: String) -> [Int] {
        (0..<h.count).filter { h.name(at: $0).lowercased() == lowered }
    }

    private func values(_ h: HTTPHeaders, _ lowered: String) -> [String] { indices(h, lowered).map { h.value(at: $0) } }

    private func elements(_ h: HTTPHeaders, _ lowered: String) -> [String] {
        values(h, lowered).flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: [" ", "\t"]) }.filter { !$0.isEmpty }
    }

    private func byNameLifetime(_ r: ResponseHead, responseTime: Int64, heuristic: Int?) -> Int64 {
        let cc = CacheControl(parsing: values(r.headers, "cache-control"))
        let date = values(r.headers, "date").first.flatMap(HTTPDate.parse) ?? responseTime
        if let s = cc.sMaxAge { return s }
        if let m = cc.maxAge { return m }
        let expires = values(r.headers, "expires")
        if !expires.isEmpty {
            guard expires.count == 1, let at = HTTPDate.parse(expires[0]) else { return 0 }
            return max(0, at - date)
        }
        if let heuristic, ResponseCache.heuristicallyCacheable.contains(r.status),
           let modified = values(r.headers, "last-modified").first.flatMap(HTTPDate.parse), modified < date {
            return (date - modified) * Int64(heuristic) / 100
        }
        return 0
    }

    private func byNameFieldRefusal(_ q: RequestHead, _ r: ResponseHead) -> CacheRefusal? {
        guard q.method == .get else { return .method }
        guard r.status >= 200, r.status != 206, r.status != 304 else { return .status }
        let rcc = CacheControl(parsing: values(r.headers, "cache-control"))
        let qcc = CacheControl(parsing: values(q.headers, "cache-control"))
        if rcc.noStore || qcc.noStore { return .noStore }
        if rcc.isPrivate { return .private }
        if !(rcc.isPublic || rcc.sMaxAge != nil || rcc.mustRevalidate), !indices(q.headers, "authorization").isEmpty {
            return .authorization
        }
        if !indices(r.headers, "set-cookie").isEmpty { return .setCookie }
        if elements(r.headers, "vary").contains("*") { return .varyStar }
        return nil
    }

    private func byNameAge(_ h: HTTPHeaders) -> Int64 {
        guard let first = elements(h, "age").first, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return 0 }
        return CacheControl.delta(first)
    }

    private func byNameStorable(_ h: HTTPHeaders) -> HTTPHeaders {
        let listed = (values(h, "connection") + values(h, "proxy-connection"))
            .flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: [" ", "\t"]).lowercased() }
        let dropped = Set(["connection", "proxy-connection", "keep-alive", "te", "trailer", "upgrade", "proxy-authorization",
                           "transfer-encoding", "content-length", "age"] + listed)
        var out = HTTPHeaders()
        for i in 0..<h.count where !dropped.contains(h.name(at: i).lowercased()) { out.append(name: h.name(at: i), value: h.value(at: i)) }
        return out
    }

    private func byNameNotModified(_ q: RequestHead, _ stored: HTTPHeaders) -> Bool {
        let inm = values(q.headers, "if-none-match")
        if !inm.isEmpty {
            switch EntityTag.condition(inm.joined(separator: ", ")) {
            case .any: return true
            case .tags(let tags):
                guard let mine = values(stored, "etag").first.flatMap(EntityTag.init(parsing:)) else { return false }
                return tags.contains { $0.weakMatch(mine) }
            case .invalid: return false
            }
        }
        guard let since = values(q.headers, "if-modified-since").first.flatMap(HTTPDate.parse) else { return false }
        guard let modified = values(stored, "last-modified").first.flatMap(HTTPDate.parse)
                ?? values(stored, "date").first.flatMap(HTTPDate.parse) else { return false }
        return modified <= since
    }

    private func byNameNotModifiedHeadNames(_ h: HTTPHeaders) -> [String] {
        var kept: Set<String> = ["cache-control", "content-location", "date", "etag", "expires", "vary", "age"]
        if indices(h, "etag").isEmpty { kept.insert("last-modified") }
        return (0..<h.count).filter { kept.contains(h.name(at: $0).lowercased()) }.map { h.name(at: $0) + ": " + h.value(at: $0) }
    }

    private func byNameNotModifiedMatches(_ notModified: HTTPHeaders, stored: HTTPHeaders) -> Bool {
        if let tagText = values(notModified, "etag").first {
            guard let tag = EntityTag(parsing: tagText), let mine = values(stored, "etag").first.flatMap(EntityTag.init(parsing:)) else {
                return false
            }
            return tag.weakMatch(mine) && tag.isWeak == mine.isWeak
        }
        if let modified = values(notModified, "last-modified").first {
            return values(stored, "last-modified").first.flatMap(HTTPDate.parse) == HTTPDate.parse(modified)
        }
        return true
    }

    // MARK: the readers against them

    func testEveryReaderAgreesWithTheRulesByName() {
        for round in 0..<3000 {
            let status = [200, 200, 200, 203, 206, 304, 404, 500][next(8)]
            let response = ResponseHead(status: status, reason: "R", headers: headers(from: responseFields, upTo: 9))
            let method: AirlockWire.Method = next(8) == 0 ? .head : .get
            let request = RequestHead(method: method, target: .origin(path: "/a"),
                                      headers: headers(from: requestFields, upTo: 5), host: "o.test")
            let heuristic = [nil, 10, 50][next(3)]
            let r = response.headers, q = request.headers
            let context = "round \(round): \((0..<r.count).map { r.name(at: $0) + ": " + r.value(at: $0) }) / \((0..<q.count).map { q.name(at: $0) + ": " + q.value(at: $0) })"

            XCTAssertEqual(CacheControl(r), CacheControl(parsing: values(r, "cache-control")), context)
            XCTAssertEqual(CacheControl(q), CacheControl(parsing: values(q, "cache-control")), context)
            let facts = ResponseCache.Facts(response, responseTime: t0, heuristicPercent: heuristic)
            XCTAssertEqual(facts.date, values(r, "date").first.flatMap(HTTPDate.parse) ?? t0, context)
            XCTAssertEqual(facts.hasExpires, !indices(r, "expires").isEmpty, context)
            XCTAssertEqual(facts.lifetime, byNameLifetime(response, responseTime: t0, heuristic: heuristic), context)
            XCTAssertEqual(ResponseCache.fieldRefusal(request: request, response: response), byNameFieldRefusal(request, response), context)
            XCTAssertEqual(ResponseCache.ageValue(r), byNameAge(r), context)
            XCTAssertEqual(ResponseCache.hasValidator(r), !indices(r, "etag").isEmpty || !indices(r, "last-modified").isEmpty, context)
            XCTAssertEqual(ResponseCache.storableFields(r), byNameStorable(r), context)
            XCTAssertEqual(ResponseCache.conditionalFields(for: r).map { $0.name + ": " + $0.value },
                           (values(r, "etag").prefix(1).map { "If-None-Match: " + $0 })
                               + (values(r, "last-modified").prefix(1).map { "If-Modified-Since: " + $0 }), context)
            let stored = ResponseHead(status: 200, reason: "OK", headers: headers(from: responseFields, upTo: 6))
            XCTAssertEqual(ResponseCache.notModified(request: request, stored: stored), byNameNotModified(request, stored.headers), context)
            let head = ResponseCache.notModifiedHead(response).headers
            XCTAssertEqual((0..<head.count).map { head.name(at: $0) + ": " + head.value(at: $0) }, byNameNotModifiedHeadNames(r), context)
            XCTAssertEqual(ResponseCache.notModifiedMatches(r, stored: stored.headers),
                           byNameNotModifiedMatches(r, stored: stored.headers), context)
        }
    }

    /// The common miss's head (Date and Last-Modified, `Connection: keep-alive`, nothing else the
    /// cache reads) gives exactly what the rules by name give.
    func testTheCommonMissHeadReadsAsByName() {
        var r = HTTPHeaders()
        for (name, value) in [("Server", "nginx"), ("Date", d1), ("Content-Type", "text/plain"), ("Content-Length", "100"),
                              ("Last-Modified", d3), ("Connection", "keep-alive"), ("ETag", "\"6b-64\""), ("Accept-Ranges", "bytes")] {
            r.append(name: name, value: value)
        }
        let response = ResponseHead(status: 200, reason: "OK", headers: r)
        let request = RequestHead(method: .get, target: .origin(path: "/a"), headers: HTTPHeaders(), host: "o.test")
        let facts = ResponseCache.Facts(response, responseTime: 0, heuristicPercent: 10)
        XCTAssertEqual(facts.lifetime, (t0 - HTTPDate.parse(d3)!) / 10)
        XCTAssertNil(ResponseCache.fieldRefusal(request: request, response: response))
        XCTAssertNil(ResponseCache.refusal(request: request, response: response, heuristicPercent: 10))
        let stored = ResponseCache.storableFields(r)
        XCTAssertEqual((0..<stored.count).map { stored.name(at: $0) },
                       ["Server", "Date", "Content-Type", "Last-Modified", "ETag", "Accept-Ranges"])
        XCTAssertEqual(stored, byNameStorable(r))
    }
}
