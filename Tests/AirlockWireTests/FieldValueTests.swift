import AirlockWire
import XCTest

/// The field-value parsers behind resume and the response cache: `Content-Range` (RFC 9110
/// 14.4), entity tags (8.8.3), HTTP-dates (5.6.7) and `Cache-Control` (RFC 9111 5.2). Hostile
/// and garbled values parse to nil (or to the cautious reading), never to a guess.
final class FieldValueTests: XCTestCase {
    func testContentRangeAcceptsTheGrammar() {
        XCTAssertEqual(ContentRange(parsing: "bytes 0-499/1234"), .bytes(first: 0, last: 499, completeLength: 1234))
        XCTAssertEqual(ContentRange(parsing: "BYTES 500-999/*"), .bytes(first: 500, last: 999, completeLength: nil))
        XCTAssertEqual(ContentRange(parsing: "bytes */1234"), .unsatisfied(completeLength: 1234))
        XCTAssertEqual(ContentRange(parsing: "bytes 7-7/8"), .bytes(first: 7, last: 7, completeLength: 8))
        XCTAssertEqual(ContentRange(parsing: "bytes 0-999999999999999999/*")?.length, 1_000_000_000_000_000_000)
    }

    func testContentRangeRefusesHostileValues() {
        let hostile = [
            "", "bytes", "bytes ", "bytes 0-1", "bytes 0-1/", "bytes 1-0/10", "bytes 0-10/10", "bytes 5-5/5",
            "bytes  0-1/10", "bytes\t0-1/10", "bytes 0 -1/10", "bytes 0- 1/10", "bytes 0-1 /10", "bytes 0-1/10 ",
            "bytes -1-5/10", "bytes +1-5/10", "bytes 0-1/-10", "bytes 0-1/1e3", "bytes 0x0-1/10", "bytes=0-1/10",
            "items 0-1/10", "bytes 0-1,2-3/10", "bytes */*", "bytes *", "bytes */", "bytes */10/10",
            "bytes 0-18446744073709551616/*", "bytes 0-1000000000000000000/*", "bytes 0-1/10\0", "bytes ０-1/10",
            "bytes 0-1/10/20", "bytes 0--1/10",
        ]
        for value in hostile {
            XCTAssertNil(ContentRange(parsing: value), value.debugDescription)
        }
    }

    /// 50,000 seeded near-valid and random values: the parser accepts exactly what a regular
    /// expression of RFC 9110 14.4's grammar (with the 18-digit cap and the ordering rules)
    /// accepts, and reads the same numbers.
    func testContentRangeAgreesWithTheGrammarOnGeneratedValues() throws {
        let range = try Regex("^(?i:bytes) ([0-9]{1,18})-([0-9]{1,18})/([0-9]{1,18}|\\*)$")
        let unsatisfied = try Regex("^(?i:bytes) \\*/([0-9]{1,18})$")
        func oracle(_ s: String) -> ContentRange? {
            if let m = s.wholeMatch(of: range), let first = UInt64(m.output[1].substring!), let last = UInt64(m.output[2].substring!) {
                let lengthText = m.output[3].substring!
                let length = lengthText == "*" ? nil : UInt64(lengthText)
                guard first <= last, length.map({ last < $0 }) ?? true else { return nil }
                return .bytes(first: first, last: last, completeLength: length)
            }
            if let m = s.wholeMatch(of: unsatisfied), let length = UInt64(m.output[1].substring!) {
                return .unsatisfied(completeLength: length)
            }
            return nil
        }
        var state: UInt64 = 21   // SplitMix64: the same values every run
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        func number() -> String {
            switch next() % 4 {
            case 0: return String(next() % 10)
            case 1: return String(next() % 100_000)
            case 2: return "0" + String(next() % 1000)
            default: return String(next() % 1_000_000_000_000_000_000)
            }
        }
        let alphabet = Array("bytesBYTES 0123456789-/*,\t=".utf8)
        var accepted = 0
        for _ in 0..<50_000 {
            var bytes: [UInt8]
            if next() % 8 == 0 {
                bytes = Array("bytes */\(number())".utf8)
            } else {
                bytes = Array("bytes \(number())-\(number())/\(next() % 3 == 0 ? "*" : number())".utf8)
            }
            for _ in 0..<(next() % 3) where !bytes.isEmpty {   // 0-2 random edits
                let at = Int(next() % UInt64(bytes.count))
                switch next() % 3 {
                case 0: bytes[at] = alphabet[Int(next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(next() % UInt64(alphabet.count))], at: at)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let parsed = ContentRange(parsing: text)
            XCTAssertEqual(parsed, oracle(text), text.debugDescription)
            if parsed != nil { accepted += 1 }
        }
        XCTAssertGreaterThan(accepted, 5_000, "the generator reaches the accepting side too")
        XCTAssertLessThan(accepted, 40_000, "and the refusing side")
    }

    func testEntityTags() throws {
        let strong = try XCTUnwrap(EntityTag(parsing: "\"xyzzy\""))
        let weak = try XCTUnwrap(EntityTag(parsing: "W/\"xyzzy\""))
        XCTAssertFalse(strong.isWeak)
        XCTAssertTrue(weak.isWeak)
        XCTAssertEqual(weak.text, "W/\"xyzzy\"")
        XCTAssertEqual(EntityTag(parsing: "\"\"")?.opaque, "\"\"")
        // RFC 9110 8.8.3.2's table.
        XCTAssertFalse(weak.strongMatch(weak))
        XCTAssertTrue(weak.weakMatch(weak))
        XCTAssertFalse(weak.strongMatch(strong))
        XCTAssertTrue(weak.weakMatch(strong))
        XCTAssertTrue(strong.strongMatch(try XCTUnwrap(EntityTag(parsing: "\"xyzzy\""))))
        XCTAssertFalse(strong.strongMatch(try XCTUnwrap(EntityTag(parsing: "\"xyzzz\""))))
        for bad in ["xyzzy", "\"open", "w/\"x\"", "W/x", "\"a\"b\"", "\"a b\"", "W/", "\"", " \"x\"", "\"\u{7F}\""] {
            XCTAssertNil(EntityTag(parsing: bad), bad.debugDescription)
        }
    }

    func testConditionTagLists() throws {
        let a = try XCTUnwrap(EntityTag(parsing: "\"a,b\""))
        let c = try XCTUnwrap(EntityTag(parsing: "W/\"c\""))
        XCTAssertEqual(EntityTag.condition("\"a,b\", W/\"c\""), .tags([a, c]), "a comma inside a tag does not split")
        XCTAssertEqual(EntityTag.condition(" \"a,b\" ,,W/\"c\" "), .tags([a, c]))
        XCTAssertEqual(EntityTag.condition("*"), .any)
        for bad in ["", "*, \"a\"", "a", "\"a\" x", "\"open", "W/", "\"a\"\"b\"", ", ,"] {
            XCTAssertEqual(EntityTag.condition(bad), .invalid, bad.debugDescription)
        }
    }

    func testHTTPDateAcceptsTheThreeFormsAsOneInstant() {
        let t: Int64 = 784_111_777   // 1994-11-06T08:49:37Z, RFC 9110's example
        XCTAssertEqual(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"), t)
        XCTAssertEqual(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT"), t)
        XCTAssertEqual(HTTPDate.parse("Sun Nov  6 08:49:37 1994"), t)
        XCTAssertEqual(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT"), 0)
        XCTAssertEqual(HTTPDate.parse("Tue, 29 Feb 2000 23:59:59 GMT"), 951_868_799)
        XCTAssertEqual(HTTPDate.parse("Thursday, 01-Jan-30 00:00:00 GMT"), 1_893_456_000, "two-digit year 30 is 2030")
    }

    func testHTTPDateRefusesWhatIsNotOne() {
        let bad = [
            "", "0", "-1", "Sun, 06 Nov 1994 08:49:37 UTC", "sun, 06 Nov 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 29 Feb 1900 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sun,  06 Nov 1994 08:49:37 GMT", "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
            "1994-11-06T08:49:37Z", "Sun, 06 Nov 19x4 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMX", "Sunday, 06-Nov-94 08:49:37 GMX", "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun Mov  6 08:49:37 1994", "Xyz Nov  6 08:49:37 1994", "Sundax, 06-Nov-94 08:49:37 GMT",
            "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GM",
        ]
        for value in bad {
            XCTAssertNil(HTTPDate.parse(value), value.debugDescription)
        }
    }

    func testCacheControlDirectives() {
        let cc = CacheControl(parsing: ["public, max-age=60", "S-MaxAge=\"120\", no-cache=\"Set-Cookie, Foo\", must-revalidate"])
        XCTAssertTrue(cc.isPublic)
        XCTAssertEqual(cc.maxAge, 60)
        XCTAssertEqual(cc.sMaxAge, 120)
        XCTAssertTrue(cc.noCache, "a qualified no-cache is taken as plain no-cache")
        XCTAssertTrue(cc.mustRevalidate)
        XCTAssertFalse(cc.noStore)
        XCTAssertFalse(cc.isPrivate, "\"Foo\" inside the quoted list is no directive")
        XCTAssertTrue(CacheControl(parsing: ["private=\"x\""]).isPrivate)
        XCTAssertTrue(CacheControl(parsing: ["NO-STORE"]).noStore)
    }

    func testCacheControlInvalidOrRepeatedAgeIsZero() {
        XCTAssertEqual(CacheControl(parsing: ["max-age=soon"]).maxAge, 0)
        XCTAssertEqual(CacheControl(parsing: ["max-age"]).maxAge, 0)
        XCTAssertEqual(CacheControl(parsing: ["max-age=-5"]).maxAge, 0)
        XCTAssertEqual(CacheControl(parsing: ["max-age=60", "max-age=3600"]).maxAge, 0)
        XCTAssertEqual(CacheControl(parsing: ["max-age=99999999999999999999999"]).maxAge, CacheControl.maxDelta)
        XCTAssertNil(CacheControl(parsing: ["no-store"]).maxAge)
        XCTAssertEqual(CacheControl(parsing: ["max-age=60 junk, no-store"]).maxAge, nil, "a malformed element is skipped")
        XCTAssertTrue(CacheControl(parsing: ["max-age=60 junk, no-store"]).noStore)
    }

    func testHeadersValuesByName() {
        var h = HTTPHeaders()
        h.append(name: "Vary", value: "Accept-Encoding, Origin")
        h.append(name: "X", value: "1")
        h.append(name: "vary", value: " ,Accept-Language")
        XCTAssertEqual(h.values(name: "VARY"), ["Accept-Encoding, Origin", ",Accept-Language"])
        XCTAssertEqual(h.listElements(name: "vary"), ["Accept-Encoding", "Origin", "Accept-Language"])
        XCTAssertEqual(h.values(name: "none"), [])
    }
}
