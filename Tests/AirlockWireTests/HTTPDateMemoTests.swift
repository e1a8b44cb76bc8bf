import AirlockWire
import XCTest

/// `HTTPDateMemo` answers exactly as `HTTPDate.parse` for every text, whatever came before it:
/// texts that differ only in their last bytes, in length only, that are too long to keep,
/// invalid ones, and sequences that push each other out of its two slots.
final class HTTPDateMemoTests: XCTestCase {
    private static let pool: [String] = [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:38 GMT",           // differs in byte 27 (the fourth word)
        "Mon, 06 Nov 1994 08:49:37 GMT",           // differs in byte 0
        "Sun, 06 Nov 1994 08:49:37 GMT ",          // one byte longer (invalid)
        "Sun, 06 Nov 1994 08:49:37 GM",            // one byte shorter (invalid)
        "Sunday, 06-Nov-94 08:49:37 GMT",          // rfc850, 30 bytes
        "Sun Nov  6 08:49:37 1994",                // asctime
        "Thu, 01 Jan 1970 00:00:00 GMT",           // 0
        "Fri, 31 Dec 1999 23:59:60 GMT",           // a leap second
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx1",        // 32 bytes, invalid, kept
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx2",        // 32 bytes, differs in the last one
        "Wednesday, 09-Nov-94 08:49:37 GMTx",      // 34 bytes: too long to keep
        "",
    ]

    private func parse(_ memo: inout HTTPDateMemo, _ text: String) -> Int64? {
        var t = text
        return t.withUTF8 { memo.parse(UnsafeRawBufferPointer($0)) }
    }

    func testEveryAnswerIsTheParsersWhateverCameBefore() {
        let expected = Self.pool.map { HTTPDate.parse($0) }
        XCTAssertEqual(expected[0], 784_111_777)
        XCTAssertNil(expected[3])
        XCTAssertNotNil(expected[5])
        XCTAssertNotNil(expected[6])
        var memo = HTTPDateMemo()
        // Every ordered pair, each text twice in a row (a match) and after each other (a replacement).
        for i in Self.pool.indices {
            for j in Self.pool.indices {
                for k in [i, i, j, i, j, j] {
                    XCTAssertEqual(parse(&memo, Self.pool[k]), expected[k], "\(Self.pool[k]) after \(Self.pool[i]), \(Self.pool[j])")
                }
            }
        }
        // A bounded random walk over the pool, every answer checked.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let k = Int.random(in: Self.pool.indices, using: &rng)
            XCTAssertEqual(parse(&memo, Self.pool[k]), expected[k], Self.pool[k])
        }
    }

    /// The two texts a cache reads over and over (a `Date`, a `Last-Modified`) stay held when
    /// read in turn: the answers are right after a third text comes and goes.
    func testTwoTextsInTurnAndAThirdBetween() {
        var memo = HTTPDateMemo()
        let date = "Thu, 26 Nov 2026 20:00:00 GMT", modified = "Tue, 24 Nov 2026 20:00:00 GMT"
        for round in 0..<100 {
            XCTAssertEqual(parse(&memo, date), HTTPDate.parse(date))
            XCTAssertEqual(parse(&memo, modified), HTTPDate.parse(modified))
            if round % 10 == 0 {
                let next = "Thu, 26 Nov 2026 20:00:0\(round / 10) GMT"
                XCTAssertEqual(parse(&memo, next), HTTPDate.parse(next))
            }
        }
    }
}
