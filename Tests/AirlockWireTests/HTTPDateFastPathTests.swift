@testable import AirlockWire
import XCTest

/// `HTTPDate.fixdate`, the IMF-fixdate fast path, against the general parser
/// (`parseAnyForm`): on every generated input, valid or not, the fast path either declines
/// (nil) or gives the general parser's answer, and `parse` always gives the general answer.
/// Canonical dates must take the fast path (or it would be a path never taken).
final class HTTPDateFastPathTests: XCTestCase {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]   // from 1970-01-01, a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `t` as an IMF-fixdate, by Howard Hinnant's `civil_from_days` (written apart from the parser's own arithmetic).
    private static func fixdate(_ t: Int64) -> String {
        let days = t >= 0 ? t / 86_400 : (t - 86_399) / 86_400
        let secs = t - days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        let weekday = Int(((days % 7) + 7) % 7)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = String(repeating: "0", count: max(0, 4 - String(y).count)) + String(y)
        return "\(Self.days[weekday]), \(two(d)) \(Self.months[Int(m) - 1]) \(year) \(two(secs / 3600)):\(two(secs / 60 % 60)):\(two(secs % 60)) GMT"
    }

    /// Checks one input; returns whether the fast path took it.
    @discardableResult
    private func check(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { m in
            let u = UnsafeRawBufferPointer(m)
            let b = u
            let general = HTTPDate.parseAnyForm(b)
            let fast = HTTPDate.fixdate(b)
            if let fast { XCTAssertEqual(fast, general, "fast path on \(text.debugDescription)", file: file, line: line) }
            XCTAssertEqual(HTTPDate.parse(b), general, "parse on \(text.debugDescription)", file: file, line: line)
            return fast != nil
        }
    }

    func testCanonicalDatesTakeTheFastPathAndAgree() {
        var rng = SystemRandomNumberGenerator()
        var instants: [Int64] = [0, 784_111_777, 951_868_799, 951_782_400, 253_402_300_799, -62_135_596_800, 1_709_164_800]
        for _ in 0..<2000 { instants.append(Int64.random(in: -62_135_596_800...253_402_300_799, using: &rng)) }
        for t in instants {
            let text = Self.fixdate(t)
            XCTAssertTrue(check(text), "the fast path declined \(text)")
            XCTAssertEqual(HTTPDate.parse(text), t, text)
        }
    }

    func testEveryFieldAtItsBoundsAgrees() {
        var taken = 0, declined = 0
        for day in Self.days + ["Xyz", "sun", "SUN", "Sunday"] {
            for month in Self.months + ["Jux", "jan", "JAN"] {
                for dd in ["00", "01", "28", "29", "30", "31", "32", "99", " 1", "1x"] {
                    for year in ["0000", "0001", "1900", "1970", "2000", "2024", "2100", "9999", "19x4"] {
                        if check("\(day), \(dd) \(month) \(year) 12:34:56 GMT") { taken += 1 } else { declined += 1 }
                    }
                }
            }
        }
        for (h, m, s) in [("00", "00", "00"), ("23", "59", "59"), ("23", "59", "60"), ("23", "59", "61"), ("24", "00", "00"),
                          ("23", "60", "00"), ("0x", "00", "00"), ("99", "99", "99"), ("-1", "00", "00")] {
            if check("Tue, 29 Feb 2000 \(h):\(m):\(s) GMT") { taken += 1 } else { declined += 1 }
        }
        XCTAssertGreaterThan(taken, 0)
        XCTAssertGreaterThan(declined, 0)
    }

    /// Every byte of a valid fixdate replaced by each of a set of bytes, and the other forms:
    /// the fast path takes none of the malformed ones that the general parser refuses.
    func testEveryByteMutatedAgrees() {
        let base = Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)
        let replacements: [UInt8] = Array("0123456789 ,:-/GMTUXxaSunNovJ".utf8) + [0x00, 0x09, 0x7F, 0xFF, 0x2F, 0x3A]
        for i in base.indices {
            for r in replacements where r != base[i] {
                var mutated = base
                mutated[i] = r
                check(String(decoding: mutated, as: UTF8.self))
            }
        }
        for text in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT ",
                     " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GM", "", "Sun, 06 Nov 1994 8:49:37 GMT"] {
            XCTAssertFalse(check(text), text)
        }
    }
}

/// The fast path read a word at a time: every byte of valid fixdates set to every value
/// 0–255, as raw bytes (not through a String, which would re-encode the high ones), agrees
/// with the general parser; so do dates whose digits sit next to bytes that would carry.
final class HTTPDateFastPathBytesTests: XCTestCase {
    private func check(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> Bool {
        bytes.withUnsafeBytes { b in
            let general = HTTPDate.parseAnyForm(b)
            let fast = HTTPDate.fixdate(b)
            if let fast, fast != general { XCTFail("fast path \(fast) on \(bytes), general \(String(describing: general))", file: file, line: line) }
            if HTTPDate.parse(b) != general { XCTFail("parse on \(bytes)", file: file, line: line) }
            return fast != nil
        }
    }

    func testEveryByteValueAtEveryPositionAgrees() {
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Tue, 29 Feb 2000 23:59:60 GMT", "Wed, 31 Dec 9999 00:00:00 GMT",
                     "Mon, 01 Jan 0001 19:09:09 GMT"] {
            let base = Array(text.utf8)
            XCTAssertTrue(check(base), text)
            var taken = 0
            for i in base.indices {
                for value in 0...255 where UInt8(value) != base[i] {
                    var mutated = base
                    mutated[i] = UInt8(value)
                    if check(mutated) { taken += 1 }
                }
            }
            XCTAssertGreaterThan(taken, 0, "some digit changes still make a date: \(text)")
        }
    }
}
