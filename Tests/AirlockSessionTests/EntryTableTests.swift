import XCTest
@testable import AirlockSession
import AirlockWire

/// `EntryTable`, the response cache's index and recency list, against a plain model: every
/// operation's answer, the count, every key's entry and the whole order after every step, with
/// hashes chosen to collide (the same low 32 bits, which pick the bucket and are compared first;
/// homes a few buckets apart, so probe runs overlap and wrap) and the table growing and shrinking.
final class EntryTableTests: XCTestCase {
    private func entry(_ n: Int) -> ResponseCache.Entry {
        ResponseCache.Entry.make(key: CacheKey(url: "http://o.test/\(n)"), head: responseHead("HTTP/1.1 200 OK"), body: [],
                                 requestTime: 0, responseTime: 0, initialAge: 0, lifetime: 0, alwaysRevalidate: false)
    }

    func testItAnswersAsAModelDoesUnderCollidingHashes() {
        // 240 hashes: 40 low halves (some equal modulo every table size, some neighbours, one at
        // the top of the range so runs wrap), each with 6 high halves (same bucket bits, same
        // low 32 bits, different keys): 4 with the same top bits (one `EntryTable.tag`), 2 with
        // others (tags that differ within one probe run).
        var lows: [UInt64] = []
        for i in 0..<10 { lows.append(UInt64(7 + 64 * i)) }           // one home in every table size
        for i in 10..<20 { lows.append(UInt64(i)) }                   // neighbours
        for i in 20..<30 { lows.append(0xFFFF_FFF0 + UInt64(i - 20)) } // the last buckets: runs wrap
        for i in 30..<40 { lows.append(UInt64(i * 1_000_003)) }
        var hashes: [UInt64] = []
        for low in lows {
            for high in 1...4 { hashes.append(UInt64(high * 0x9E37) << 32 | low) }
            for high in 1...2 { hashes.append(UInt64(high) << 58 | UInt64(high * 0x9E37) << 32 | low) }
        }
        var table = EntryTable()
        var model: [UInt64: ResponseCache.Entry] = [:]
        var order: [UInt64] = []   // most recent first
        var rng = SystemRandomNumberGenerator()
        var made = 0
        func use(_ h: UInt64) { order.removeAll { $0 == h }; order.insert(h, at: 0) }
        for step in 0..<20_000 {
            let h = hashes.randomElement(using: &rng)!
            // Phases that mostly insert, then mostly remove, so the table grows and empties.
            let filling = (step / 2_000) % 2 == 0
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<(filling ? 6 : 2):
                made += 1
                let e = entry(made)
                let old = table.updateValue(e, forKey: h)
                XCTAssertTrue(old === model[h], "step \(step): the replaced entry")
                model[h] = e
                use(h)
            case 6, 2...5:
                XCTAssertTrue(table.remove(h) === model.removeValue(forKey: h), "step \(step): remove")
                order.removeAll { $0 == h }
            case 7:
                XCTAssertEqual(table.touch(h), model[h] != nil, "step \(step): touch")
                if model[h] != nil { use(h) }
            case 8:
                let oldest = order.popLast()
                XCTAssertTrue(table.removeLeastRecent() === oldest.flatMap { model.removeValue(forKey: $0) }, "step \(step): oldest")
            default:
                XCTAssertTrue(table.peek(h) === model[h], "step \(step): peek")
            }
            XCTAssertEqual(table.count, model.count, "step \(step)")
            if step % 97 == 0 || step > 19_900 {
                for k in hashes { XCTAssertTrue(table.peek(k) === model[k], "step \(step): \(k)") }
                var listed: [ResponseCache.Entry] = []
                table.forEachMostRecent { listed.append($0); return true }
                XCTAssertEqual(listed.count, order.count, "step \(step)")
                XCTAssertTrue(zip(listed, order).allSatisfy { $0 === model[$1] }, "step \(step): the recency order")
            }
        }
        while let oldest = order.popLast() { XCTAssertTrue(table.removeLeastRecent() === model.removeValue(forKey: oldest)) }
        XCTAssertNil(table.removeLeastRecent())
        XCTAssertEqual(table.count, 0)
        for k in hashes { XCTAssertNil(table.peek(k)) }
    }

    /// What a purge reads of an entry long unused (its reference count, in the object's first
    /// 16 bytes, then `bytes` and `variantCount`) and a lookup's freshness fields sit in the
    /// block's first 64 bytes (`EntryHeader`'s order).
    func testAPurgeReadsOneLineOfAnEntry() throws {
        typealias H = ResponseCache.EntryHeader
        let objectHeader = 16   // the metadata pointer and the reference count
        for path in [\H.bytes, \H.hash, \H.lifetime, \H.responseTime] as [PartialKeyPath<H>] {
            let at = try XCTUnwrap(MemoryLayout<H>.offset(of: path))
            XCTAssertLessThanOrEqual(objectHeader + at + 8, 64, "\(path)")
        }
        XCTAssertLessThanOrEqual(objectHeader + (try XCTUnwrap(MemoryLayout<H>.offset(of: \H.variantCount))) + 4, 64)
        // The block's bytes follow the header unpadded (`UInt8` elements): a header size that
        // is a multiple of 8 keeps the fields' compact form, at an 8-aligned offset in them,
        // aligned for its `UInt32`s (`HTTPHeaders.writeCompact` refuses a misaligned one).
        XCTAssertEqual(MemoryLayout<H>.size % 8, 0)
        let e = ResponseCache.Entry.make(key: CacheKey(url: "http://o.test/abc"), head: responseHead("HTTP/1.1 200 OK", "A: b"),
                                         body: [1, 2, 3], requestTime: 0, responseTime: 0, initialAge: 0, lifetime: 0,
                                         alwaysRevalidate: false)
        XCTAssertEqual(e.withUnsafeMutablePointerToElements { Int(bitPattern: $0) % 8 }, 0)
        XCTAssertEqual(e.head.headers.first(name: "a"), "b")
        XCTAssertEqual(e.body, [1, 2, 3])
    }
}
