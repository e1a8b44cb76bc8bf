@testable import AirlockWire
import XCTest

/// `KnownField.classify` (length, first letter, then a word-at-a-time compare) against a by-name
/// reference: every case variant of every known name, every one-byte change of one (near misses
/// of equal length, a CR where a `-` is, bytes one case-bit away from a letter), and the heads'
/// record of which known fields they hold.
final class KnownFieldTests: XCTestCase {
    /// The by-name answer: the known field whose canonical name equals `bytes` with ASCII A–Z
    /// lowered (as `ByteClass.lower` does), else `.other`.
    private func reference(_ bytes: [UInt8]) -> KnownField {
        let lowered = bytes.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }
        return KnownField.allCases.first { $0 != .other && Array($0.canonicalName.lowercased().utf8) == lowered } ?? .other
    }

    private func classify(_ bytes: [UInt8]) -> KnownField {
        bytes.withUnsafeBytes { KnownField.classify($0) }
    }

    private var known: [KnownField] { KnownField.allCases.filter { $0 != .other } }

    /// What the cache reads is known, each under its own name; canonical names are letters and
    /// `-` only (what the word compare assumes) and classify as themselves.
    func testTheCacheFieldsAreKnownUnderTheirCanonicalNames() {
        let expected: [(String, KnownField)] = [
            ("Cache-Control", .cacheControl), ("Last-Modified", .lastModified), ("Expires", .expires), ("ETag", .etag),
            ("Age", .age), ("Vary", .vary), ("Set-Cookie", .setCookie), ("Authorization", .authorization),
            ("If-None-Match", .ifNoneMatch), ("If-Modified-Since", .ifModifiedSince), ("Range", .range),
        ]
        for (name, field) in expected {
            XCTAssertEqual(KnownField(name: name), field, name)
            XCTAssertEqual(field.canonicalName, name)
        }
        for field in known {
            XCTAssertEqual(KnownField(name: field.canonicalName), field, field.canonicalName)
            XCTAssertTrue(field.canonicalName.utf8.allSatisfy { ByteClass.isAlpha($0) || $0 == UInt8(ascii: "-") }, field.canonicalName)
            XCTAssertGreaterThanOrEqual(field.canonicalName.utf8.count, 2)
            XCTAssertLessThanOrEqual(field.canonicalName.utf8.count, 24, "the compare reads at most three words")
        }
        XCTAssertLessThan(KnownField.allCases.count, 32, "a head's set of known fields is 32 bits")
    }

    /// Every upper/lower-case spelling of every known name (Gray code: one letter flips per step).
    func testEveryCaseVariantOfEveryKnownNameIsClassified() {
        for field in known {
            var name = Array(field.canonicalName.lowercased().utf8)
            let letters = name.indices.filter { ByteClass.isAlpha(name[$0]) }
            let variants = 1 << letters.count
            var wrong = 0
            for step in 0..<variants {
                if step > 0 { name[letters[step.trailingZeroBitCount]] ^= 0x20 }
                if classify(name) != field { wrong += 1 }
            }
            XCTAssertEqual(wrong, 0, "\(field.canonicalName): \(wrong) of \(variants) spellings misclassified")
        }
    }

    /// Each position of each known name (lower and upper case) set to every byte value: the
    /// near misses of equal length, and a CR (0x0D, `-` without bit 5) or `@`/`[`/`` ` ``/`{`
    /// (a letter's neighbours) where they would fool a case fold.
    func testEveryOneByteChangeAgreesWithTheByNameReference() {
        for field in known {
            for base in [field.canonicalName.lowercased(), field.canonicalName.uppercased()] {
                let name = Array(base.utf8)
                for k in name.indices {
                    for byte in 0...255 {
                        var changed = name
                        changed[k] = UInt8(byte)
                        let got = classify(changed)
                        let want = reference(changed)
                        if got != want { XCTFail("\(changed): \(got), expected \(want)") }
                    }
                }
            }
        }
    }

    /// Names one byte longer or shorter, and seeded random names of every length from 0 to 24 over
    /// letters, `-` and digits, against the reference.
    func testOtherLengthsAndRandomNamesAgreeWithTheReference() {
        for field in known {
            let name = Array(field.canonicalName.utf8)
            XCTAssertEqual(classify(Array(name.dropLast())), reference(Array(name.dropLast())))
            XCTAssertEqual(classify(Array(name.dropFirst())), reference(Array(name.dropFirst())))
            XCTAssertEqual(classify(name + [UInt8(ascii: "s")]), .other)
        }
        let alphabet = Array("aeiocdgnrtlmsxyAEICDGNRTLMSX-0".utf8)
        var seed: UInt64 = 7
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        for _ in 0..<20_000 {
            let name = (0..<next(25)).map { _ in alphabet[next(alphabet.count)] }
            XCTAssertEqual(classify(name), reference(name), String(decoding: name, as: UTF8.self))
        }
    }

    /// The parser classifies the new fields in whatever case they arrive, keeping the name's bytes.
    func testParsedHeadsClassifyTheCacheFieldsAndKeepTheirNames() throws {
        let head = try response("HTTP/1.1 200 OK\r\ncache-CONTROL: max-age=1\r\nETAG: \"a\"\r\nage: 2\r\nVARY: *\r\nSet-cookie: a=b\r\nLast-Modified: x\r\nexpires: 0\r\nX-Age: 3\r\nrange: bytes=0-\r\n\r\n")
        XCTAssertEqual((0..<head.headers.count).map { head.headers.known(at: $0) },
                       [.cacheControl, .etag, .age, .vary, .setCookie, .lastModified, .expires, .other, .range])
        XCTAssertEqual((0..<head.headers.count).map { head.headers.name(at: $0) },
                       ["cache-CONTROL", "ETAG", "age", "VARY", "Set-cookie", "Last-Modified", "expires", "X-Age", "range"])
    }
}

/// Which fields are hop-by-hop is `HopByHop`'s list, whatever else is known.
final class HopByHopKnownFieldsTests: XCTestCase {
    func testOnlyTheHopByHopFieldsAreHopByHop() {
        let hopByHop: [KnownField] = [.connection, .proxyConnection, .keepAlive, .te, .trailer, .upgrade, .proxyAuthorization,
                                      .transferEncoding, .contentLength]
        for field in KnownField.allCases where field != .other {
            for name in [field.canonicalName, field.canonicalName.lowercased()] {
                var h = HTTPHeaders()
                h.append(name: name, value: "1")
                XCTAssertEqual(HopByHop.isHopByHop(h, at: 0, connectionTokens: []), hopByHop.contains(field), name)
                XCTAssertEqual(HopByHop.fields.contains(field), hopByHop.contains(field), name)
            }
        }
    }
}
