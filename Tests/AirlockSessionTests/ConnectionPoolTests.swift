import AirlockSession
import XCTest

final class ConnectionPoolTests: XCTestCase {
    final class Conn { let n: Int; init(_ n: Int) { self.n = n } }
    let a = UpstreamKey(scheme: "http", host: "a", port: 80)
    let b = UpstreamKey(scheme: "http", host: "b", port: 80)

    func testCheckoutIsMostRecentlyParkedFirstAndPerKey() {
        let pool = ConnectionPool<Conn>(maxIdlePerKey: 4)
        let c1 = Conn(1), c2 = Conn(2), c3 = Conn(3)
        XCTAssertNil(pool.checkin(c1, key: a))
        XCTAssertNil(pool.checkin(c2, key: a))
        XCTAssertNil(pool.checkin(c3, key: b))
        XCTAssertTrue(pool.checkout(a) === c2)
        XCTAssertTrue(pool.checkout(a) === c1)
        XCTAssertNil(pool.checkout(a))
        XCTAssertTrue(pool.checkout(b) === c3)
        XCTAssertEqual(pool.stats.reused, 3)
    }

    func testCapEvictsTheOldest() {
        let pool = ConnectionPool<Conn>(maxIdlePerKey: 2)
        let c = (0..<3).map(Conn.init)
        XCTAssertNil(pool.checkin(c[0], key: a))
        XCTAssertNil(pool.checkin(c[1], key: a))
        XCTAssertTrue(pool.checkin(c[2], key: a) === c[0])
        XCTAssertEqual(pool.idleCount(for: a), 2)
        XCTAssertEqual(pool.stats.evicted, 1)
    }

    func testZeroCapDisablesPooling() {
        let pool = ConnectionPool<Conn>(maxIdlePerKey: 0)
        let c = Conn(0)
        XCTAssertTrue(pool.checkin(c, key: a) === c)
        XCTAssertEqual(pool.idleCount, 0)
    }

    func testRemoveAndRemoveAll() {
        let pool = ConnectionPool<Conn>(maxIdlePerKey: 4)
        let c1 = Conn(1), c2 = Conn(2)
        pool.checkin(c1, key: a)
        pool.checkin(c2, key: b)
        XCTAssertTrue(pool.remove(c1, key: a))
        XCTAssertFalse(pool.remove(c1, key: a))
        XCTAssertEqual(pool.removeAll().count, 1)
        XCTAssertEqual(pool.idleCount, 0)
        XCTAssertNil(pool.checkout(b))
    }

    /// A client's preferred connection is taken out of the pool only while it is parked there
    /// under the same key; once another client took it, the preference gives nothing.
    func testTakeIsAPreferenceNotOwnership() {
        let pool = ConnectionPool<Conn>(maxIdlePerKey: 4)
        let c1 = Conn(1), c2 = Conn(2)
        pool.checkin(c1, key: a)
        pool.checkin(c2, key: a)
        XCTAssertFalse(pool.take(c1, key: b), "parked under another key")
        XCTAssertTrue(pool.take(c1, key: a), "the older one is taken although c2 is more recent")
        XCTAssertEqual(pool.idleCount(for: a), 1)
        XCTAssertFalse(pool.take(c1, key: a), "already taken")
        XCTAssertTrue(pool.checkout(a) === c2)
        XCTAssertEqual(pool.stats.reused, 2)
    }

    /// Frees descriptors when the process has none left: oldest first within an upstream,
    /// every upstream's idle connections in turn, nothing once the pool is empty.
    func testRemoveOldestEmptiesThePoolOneByOne() {
        let pool = ConnectionPool<Conn>(maxIdlePerKey: 4)
        let c1 = Conn(1), c2 = Conn(2), c3 = Conn(3)
        pool.checkin(c1, key: a)
        pool.checkin(c2, key: a)
        pool.checkin(c3, key: b)
        var taken: [Int] = []
        while let c = pool.removeOldest() { taken.append(c.n) }
        XCTAssertEqual(taken.sorted(), [1, 2, 3])
        XCTAssertLessThan(taken.firstIndex(of: 1)!, taken.firstIndex(of: 2)!, "oldest of upstream a first")
        XCTAssertEqual(pool.idleCount, 0)
        XCTAssertEqual(pool.stats.evicted, 3)
        XCTAssertNil(pool.removeOldest())
    }
}
