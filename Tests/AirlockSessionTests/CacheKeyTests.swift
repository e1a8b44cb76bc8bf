import XCTest
@testable import AirlockSession
import AirlockWire

/// `CacheKey`'s URL text (`URLText`): one block of bytes with their hash.
final class URLTextTests: XCTestCase {
    func testTextsCompareByTheirBytes() {
        let a = URLText.make("http://o.test/ab"), same = URLText.make("http://o.test/ab")
        XCTAssertFalse(a === same)
        XCTAssertTrue(a.bytesEqual(same))
        XCTAssertFalse(a.bytesEqual(URLText.make("http://o.test/ac")), "same length, one byte apart")
        XCTAssertFalse(a.bytesEqual(URLText.make("http://o.test/a")), "a prefix")
        XCTAssertFalse(URLText.make("").bytesEqual(a))
        XCTAssertTrue(URLText.make("").bytesEqual(URLText.make("")))
        XCTAssertEqual(a.string, "http://o.test/ab")
        XCTAssertEqual(a.count, 16)
        XCTAssertEqual(a.hash, SipHash.hash("http://o.test/ab"), "the bytes' SipHash under the process's key")
    }

    func testAKeysVariantsShareItsURLText() {
        let key = CacheKey(url: "http://o.test/v")
        let variant = key.variant("accept=x")
        XCTAssertTrue(variant.text === key.text)
        XCTAssertEqual(variant.base, key)
        XCTAssertTrue(variant.base.text === key.text)
        XCTAssertNotEqual(variant, key)
        XCTAssertEqual(variant, CacheKey(url: "http://o.test/v", variant: "accept=x"))
        XCTAssertEqual(variant.url, "http://o.test/v")
    }

    func testARequestsKeyIsWrittenAsItsURL() throws {
        for (target, host, port, scheme, url) in [
            ("/p?q=1", "O.Test", UInt16?.none, Scheme.http, "http://o.test/p?q=1"),
            ("/", "o.test", 8080, .http, "http://o.test:8080/"),
            ("/x", "o.test", 443, .https, "https://o.test/x"),
        ] {
            let request = RequestHead(method: .get, target: .origin(path: target), host: host, port: port)
            let key = try XCTUnwrap(CacheKey.of(scheme: scheme, request: request))
            XCTAssertEqual(key.url, url)
            XCTAssertEqual(key, CacheKey(url: url))
            XCTAssertEqual(key.hashValue, CacheKey(url: url).hashValue)
        }
        // A host whose lower-casing is longer than itself (U+0130, 2 bytes, becomes 3): the
        // text is counted after lower-casing (counted before, the write overran its capacity).
        let wide = RequestHead(method: .get, target: .origin(path: "/"), host: "A\u{130}.test")
        XCTAssertEqual(CacheKey.of(scheme: .http, request: wide)?.url, "http://" + "A\u{130}.test".lowercased() + "/")
    }

    /// The URL writer against the URL spelled by `String` operations, bytes and hash, over
    /// generated hosts, ports and paths: every ASCII byte in the host (the letters' edges `@`,
    /// `[`, `` ` ``, `{` among them), ports of 1 to 5 digits and the defaults, and hosts with
    /// characters past ASCII (lower-cased by `String` when they have upper-case letters).
    func testTheURLWriterSpellsWhatStringOperationsSpell() {
        var rng = SystemRandomNumberGenerator()
        let hostBytes = Array(0x21...0x7E).map { Character(Unicode.Scalar(UInt8($0))) }
        let ports: [UInt16?] = [nil, 80, 443, 0, 1, 9, 10, 99, 100, 999, 1000, 8080, 9999, 10000, 18632, 65535]
        var checked = 0
        for i in 0..<4000 {
            let scheme: Scheme = Bool.random(using: &rng) ? .http : .https
            var host = String((0..<Int.random(in: 0...24, using: &rng)).map { _ in hostBytes.randomElement(using: &rng)! })
            if i % 10 == 0 { host += ["\u{130}", "é", "Ö", "\u{1F600}"].randomElement(using: &rng)! }
            let port = ports.randomElement(using: &rng)!
            let path = "/" + String((0..<Int.random(in: 0...60, using: &rng)).map { _ in hostBytes.randomElement(using: &rng)! })
            let hasUpper = host.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }
            var expected = scheme.rawValue + "://" + (hasUpper ? host.lowercased() : host)
            if let port, port != scheme.defaultPort { expected += ":\(port)" }
            expected += path
            let made = URLText.make(scheme: scheme, host: host, port: port, path: path)
            XCTAssertEqual(made.string, expected, "host \(host.debugDescription) port \(String(describing: port))")
            XCTAssertEqual(made.count, expected.utf8.count)
            XCTAssertEqual(made.hash, SipHash.hash(expected), expected)
            XCTAssertTrue(made.bytesEqual(URLText.make(expected)), expected)
            checked += 1
        }
        XCTAssertEqual(checked, 4000)
    }
}

/// Request collapsing keys fills, and the entry table its entries, by their keys' hashes
/// (`FillID`): two keys sharing one (a 2^-64 chance; a client cannot aim for it under the
/// secret key) make the second request wait for the first's fill, and then go on with its own
/// key; the second's store replaces the first's entry. Never the other's answer.
final class FillIDTests: XCTestCase {
    private let t0: Int64 = 1_795_687_200

    func testKeysWhoseHashesCollideWaitButNeverShareAnAnswer() throws {
        let a = CacheKey(text: URLText.make("http://o.test/a"), variant: "", hash: 42)
        let b = CacheKey(text: URLText.make("http://o.test/b"), variant: "", hash: 42)
        XCTAssertNotEqual(a, b, "one hash, two keys")
        XCTAssertEqual(a.fillID, b.fillID)
        var cache = ResponseCache()
        let getA = requestHead("GET /a HTTP/1.1", "Host: o.test"), getB = requestHead("GET /b HTTP/1.1", "Host: o.test")
        guard case .forward(let fillA) = cache.lookup(key: a, request: getA, now: t0) else { return XCTFail("a: a miss") }
        guard case .wait(let waited) = cache.lookup(key: b, request: getB, now: t0) else { return XCTFail("b waits for a's fill") }
        XCTAssertEqual(waited, b, "it waits under its own key")
        let done = cache.complete(fillA, request: getA,
                                  response: responseHead("HTTP/1.1 200 OK", "Cache-Control: max-age=60", "Content-Length: 1"),
                                  body: [0x41], validated: true, now: t0)
        XCTAssertEqual(done.waiters, 1)
        // Woken after a store, it looks up again: its own key is not stored, so it goes upstream.
        guard case .forward(let fillB) = cache.lookup(key: b, request: getB, now: t0) else { return XCTFail("b: its own miss") }
        XCTAssertEqual(fillB.key, b)
        guard case .hit(let hitA) = cache.lookup(key: a, request: getA, now: t0) else { return XCTFail("a is stored") }
        XCTAssertEqual(hitA.body, [0x41])
        XCTAssertEqual(cache.remove(url: "http://o.test/b"), 0, "b's URL removes nothing: a's entry is not b's")
        _ = cache.complete(fillB, request: getB,
                           response: responseHead("HTTP/1.1 200 OK", "Cache-Control: max-age=60", "Content-Length: 1"),
                           body: [0x42], validated: true, now: t0)
        guard case .hit(let hitB) = cache.lookup(key: b, request: getB, now: t0) else { return XCTFail("b is stored") }
        XCTAssertEqual(hitB.body, [0x42], "each key its own answer")
        XCTAssertEqual(cache.count, 1, "b's entry replaced a's (one slot per hash)")
        XCTAssertEqual(cache.bytes, cache.listing(now: t0).map(\.bytes).reduce(0, +), "a's bytes went with it")
        XCTAssertEqual(cache.listing(now: t0).map(\.url), ["http://o.test/b"])
        guard case .forward(let again) = cache.lookup(key: a, request: getA, now: t0) else { return XCTFail("a: a miss, never b's answer") }
        XCTAssertEqual(again.key, a)
        _ = cache.abandon(again)
        XCTAssertEqual(cache.fillsInFlight, 0)
    }
}
