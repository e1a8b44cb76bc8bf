import AirlockSession
import XCTest

/// Per-upstream admission: never more than `limit` slots held, FIFO waiting bounded by
/// `queueSize`, a released slot goes to the first waiter, cancelled waiters are skipped.
final class UpstreamAdmissionTests: XCTestCase {
    func testLimitQueueAndBusy() {
        var a = UpstreamAdmission(limit: 2, queueSize: 2)
        XCTAssertEqual(a.request(1), .connect)
        XCTAssertEqual(a.request(2), .connect)
        XCTAssertEqual(a.request(3), .wait)
        XCTAssertEqual(a.request(4), .wait)
        XCTAssertEqual(a.request(5), .busy, "the queue is full")
        XCTAssertEqual(a.open, 2)
        XCTAssertEqual(a.waiting, 2)

        XCTAssertEqual(a.release(), 3, "the freed slot goes to the first waiter")
        XCTAssertEqual(a.open, 2, "handed over, not freed")
        XCTAssertEqual(a.request(6), .wait, "a newcomer queues behind 4 instead of taking a slot")
        XCTAssertEqual(a.idleAvailable(), 4, "a parked connection goes to the next waiter")
        XCTAssertEqual(a.open, 2)
        XCTAssertTrue(a.cancel(6))
        XCTAssertFalse(a.cancel(6), "already gone")
        XCTAssertNil(a.release())
        XCTAssertEqual(a.open, 1)
        XCTAssertNil(a.release())
        XCTAssertEqual(a.open, 0)
        XCTAssertNil(a.idleAvailable())
    }

    func testOpenNeverExceedsTheLimitUnderAnyInterleaving() {
        var a = UpstreamAdmission(limit: 3, queueSize: 5)
        var held = 0
        var rng = SystemRandomNumberGenerator()
        var next: UInt64 = 0
        var queued: [UInt64] = []
        for _ in 0..<10_000 {
            if Bool.random(using: &rng) {
                next += 1
                switch a.request(next) {
                case .connect: held += 1
                case .wait: queued.append(next)
                case .busy: XCTAssertEqual(a.waiting, 5)
                }
            } else if held > 0 {
                if let w = a.release() {
                    XCTAssertEqual(w, queued.removeFirst(), "FIFO")
                } else {
                    held -= 1
                }
            }
            XCTAssertLessThanOrEqual(a.open, 3)
            XCTAssertEqual(a.open, held)
            XCTAssertEqual(a.waiting, queued.count)
        }
    }
}
