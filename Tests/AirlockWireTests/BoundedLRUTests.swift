import AirlockWire
import XCTest

/// The bounded LRU behind `origin` routes' per-host state and the local CA's leaf cache: never
/// more than its capacity, the least recently used entry goes first, and a read refreshes an entry.
final class BoundedLRUTests: XCTestCase {
    func testEvictsTheLeastRecentlyUsedAndStaysBounded() {
        var lru = BoundedLRU<String, Int>(capacity: 3)
        for k in ["a", "b", "c"] { XCTAssertNil(lru.update(k, default: { 0 }) { $0 += 1 }.evicted) }
        XCTAssertEqual(lru.get("a"), 1)   // a is now the most recent; b the oldest
        XCTAssertEqual(lru.update("d", default: { 0 }) { $0 += 1 }.evicted, "b")
        XCTAssertNil(lru.peek("b"))
        XCTAssertEqual(lru.entries.map(\.0), ["d", "a", "c"])
        XCTAssertEqual(lru.update("c", default: { 0 }) { $0 += 5 }.evicted, nil, "an update of a present key evicts nothing")
        XCTAssertEqual(lru.peek("c"), 6)
        XCTAssertEqual(lru.entries.map(\.0), ["c", "d", "a"])
        for i in 0..<1000 { lru.update("host\(i)", default: { i }) { _ in } }
        XCTAssertEqual(lru.count, 3)
        XCTAssertEqual(lru.entries.map(\.0), ["host999", "host998", "host997"])
        XCTAssertEqual(lru.entries.map(\.1), [999, 998, 997])
    }

    /// `update`, `remove` and `get` in a seeded random mix against a plain model (an array, most
    /// recent first): the same values, order and answers after every step, with slots freed
    /// and reused all along.
    func testItAgreesWithAModelOverRandomOperations() {
        var lru = BoundedLRU<Int, Int>(capacity: 1000)
        var model: [(key: Int, value: Int)] = []
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        for step in 0..<5000 {
            let key = next(40)
            switch next(4) {
            case 0, 1:
                let old = model.firstIndex { $0.key == key }.map { model.remove(at: $0).value }
                model.insert((key, step), at: 0)
                XCTAssertEqual(lru.peek(key), old, "step \(step)")
                lru.update(key, default: { step }) { $0 = step }
            case 2:
                let old = model.firstIndex { $0.key == key }.map { model.remove(at: $0).value }
                XCTAssertEqual(lru.remove(key), old, "step \(step)")
            default:
                let found = model.firstIndex { $0.key == key }.map { model.remove(at: $0) }
                if let found { model.insert(found, at: 0) }
                XCTAssertEqual(lru.get(key), found?.value, "step \(step)")
            }
            XCTAssertEqual(lru.entries.map(\.0), model.map(\.key), "step \(step)")
            XCTAssertEqual(lru.entries.map(\.1), model.map(\.value), "step \(step)")
            XCTAssertEqual(lru.count, model.count)
        }
    }

    func testCapacityOne() {
        var lru = BoundedLRU<Int, String>(capacity: 1)
        lru.update(1, default: { "one" }) { _ in }
        XCTAssertEqual(lru.update(2, default: { "two" }) { _ in }.evicted, 1)
        XCTAssertEqual(lru.entries.map(\.1), ["two"])
        XCTAssertEqual(lru.count, 1)
    }

    /// A removed key is gone from the order and the count, its slot is reused, and the entries
    /// around it keep their order, so the next eviction takes the right one.
    func testRemoveUnlinksAndFreesTheSlot() {
        var lru = BoundedLRU<String, Int>(capacity: 3)
        for (i, k) in ["a", "b", "c"].enumerated() { lru.update(k, default: { i }) { _ in } }
        XCTAssertEqual(lru.remove("b"), 1)
        XCTAssertNil(lru.remove("b"), "already gone")
        XCTAssertNil(lru.peek("b"))
        XCTAssertEqual(lru.count, 2)
        XCTAssertEqual(lru.entries.map(\.0), ["c", "a"])
        XCTAssertNil(lru.update("d", default: { 3 }) { _ in }.evicted, "room was made by the remove")
        XCTAssertEqual(lru.entries.map(\.0), ["d", "c", "a"])
        XCTAssertEqual(lru.update("e", default: { 4 }) { _ in }.evicted, "a")
        XCTAssertEqual(lru.remove("e"), 4)   // the most recent
        XCTAssertEqual(lru.remove("c"), 2)   // the least recent
        XCTAssertEqual(lru.entries.map(\.0), ["d"])
        XCTAssertEqual(lru.remove("d"), 3)
        XCTAssertEqual(lru.count, 0)
        XCTAssertTrue(lru.entries.isEmpty)
        for k in ["x", "y", "z", "w"] { lru.update(k, default: { 0 }) { _ in } }
        XCTAssertEqual(lru.entries.map(\.0), ["w", "z", "y"])
    }
}
