import AirlockSession
import XCTest

/// The reachability state machine: probes decide either way at once; a refused connection
/// marks the upstream unreachable at once; resets and timeouts only after
/// `passiveFailureThreshold` in a row; each change is reported once, with its time.
final class ReachabilityTests: XCTestCase {
    func testProbesMoveBetweenReachableAndUnreachable() {
        var r = Reachability()
        XCTAssertEqual(r.state, .unknown)
        XCTAssertEqual(r.record(.probeSucceeded, now: 10), .init(from: .unknown, to: .reachable, reason: "probe succeeded"))
        XCTAssertNil(r.record(.probeSucceeded, now: 20), "no change, no transition")
        XCTAssertEqual(r.since, 10, "since is when the state began, not the last signal")
        let down = r.record(.probeFailed("connection refused"), now: 30)
        XCTAssertEqual(down?.from, .reachable)
        XCTAssertEqual(down?.to, .unreachable)
        XCTAssertEqual(r.since, 30)
        XCTAssertEqual(r.lastError, "connection refused")
        XCTAssertNil(r.record(.probeFailed("connection refused"), now: 40))
        XCTAssertEqual(r.record(.probeSucceeded, now: 50)?.to, .reachable)
        XCTAssertEqual(r.since, 50)
        XCTAssertEqual(r.lastError, "connection refused", "the last error stays for /upstreams")
    }

    func testRefusedIsUnreachableAtOnceButResetsNeedSeveralInARow() {
        var r = Reachability()
        _ = r.record(.connected, now: 1)
        XCTAssertEqual(r.state, .reachable)
        // The README's number, written out: a threshold of 1 or 2 fails here.
        XCTAssertNil(r.record(.failed("reset"), now: 2), "failure 1 of 3")
        XCTAssertNil(r.record(.failed("reset"), now: 3), "failure 2 of 3")
        XCTAssertEqual(r.state, .reachable)
        XCTAssertEqual(r.record(.failed("reset"), now: 9)?.to, .unreachable, "the third in a row")

        var s = Reachability()
        _ = s.record(.connected, now: 1)
        _ = s.record(.failed("timeout"), now: 2)
        _ = s.record(.connected, now: 3)   // a success in between starts the count again
        _ = s.record(.failed("timeout"), now: 4)
        _ = s.record(.failed("timeout"), now: 5)
        XCTAssertEqual(s.state, .reachable)

        var u = Reachability()
        XCTAssertEqual(u.record(.probeUntrusted("pin-mismatch"), now: 1)?.to, .unreachable)
        XCTAssertEqual(u.lastError, "untrusted: pin-mismatch")
        XCTAssertFalse(u.failsFast, "an untrusted upstream's requests meet the real handshake")
        XCTAssertNil(u.record(.refused("ECONNREFUSED"), now: 2))
        XCTAssertTrue(u.failsFast, "now unreachable for a network reason")

        var t = Reachability()
        _ = t.record(.connected, now: 1)
        XCTAssertFalse(t.failsFast)
        XCTAssertEqual(t.record(.refused("ECONNREFUSED"), now: 2)?.to, .unreachable)
        XCTAssertTrue(t.failsFast)
        XCTAssertEqual(t.record(.connected, now: 3)?.to, .reachable, "a connection that came up restores it")
    }
}

/// The bounded LRU behind `origin` routes' per-host state: never more than its capacity,
/// the least recently used entry goes first, and a read refreshes an entry.
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

    func testCapacityOne() {
        var lru = BoundedLRU<Int, String>(capacity: 1)
        lru.update(1, default: { "one" }) { _ in }
        XCTAssertEqual(lru.update(2, default: { "two" }) { _ in }.evicted, 1)
        XCTAssertEqual(lru.entries.map(\.1), ["two"])
        XCTAssertEqual(lru.count, 1)
    }
}
