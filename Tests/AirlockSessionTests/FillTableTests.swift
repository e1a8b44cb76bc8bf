import XCTest
@testable import AirlockSession

/// `FillTable`, the fills in flight and their waiters, against a `Dictionary` model: every
/// answer, the count and every hash's waiters after every step, with hashes whose low bits
/// collide (homes equal modulo every table size, neighbours, the last slots so runs wrap, and
/// 0) and the table growing and emptying.
final class FillTableTests: XCTestCase {
    func testItAnswersAsAModelDoesUnderCollidingHashes() {
        var lows: [UInt64] = []
        for i in 0..<8 { lows.append(UInt64(5 + 1024 * i)) }      // one home in every size up to 1024
        for i in 8..<16 { lows.append(UInt64(i)) }                // neighbours
        for i in 0..<8 { lows.append(UInt64.max - UInt64(i)) }    // the last slots: runs wrap
        lows.append(0)
        var hashes: [UInt64] = []
        for low in lows {
            for high in 0..<3 { hashes.append(low &+ (UInt64(high) << 40)) }   // same low bits, other keys
        }
        var table = FillTable()
        var model: [UInt64: Int] = [:]
        var rng = SystemRandomNumberGenerator()
        for step in 0..<40_000 {
            let h = hashes.randomElement(using: &rng)!
            let filling = (step / 4_000) % 2 == 0
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<(filling ? 6 : 3):
                let joined = table.joinOrRegister(h)
                XCTAssertEqual(joined, model[h] != nil, "step \(step): joinOrRegister")
                model[h, default: -1] += 1
            case 6..<7:
                XCTAssertEqual(table.joinIfInFlight(h), model[h] != nil, "step \(step): joinIfInFlight")
                if model[h] != nil { model[h]! += 1 }
            default:
                XCTAssertEqual(table.remove(h), model.removeValue(forKey: h), "step \(step): remove")
            }
            XCTAssertEqual(table.count, model.count, "step \(step): count")
            for k in hashes { XCTAssertEqual(table.waiters(k), model[k], "step \(step): waiters of \(k)") }
        }
    }
}
