import AirlockTesting
import Foundation
import Synchronization
import XCTest

/// `limits.max_connections_per_upstream`: 200 concurrent clients against a slow origin and a
/// cap of 10 (two workers, 5 each). The origin never has more than 10 connections or requests
/// at once; everyone gets an answer (no hang): 200, or 503 upstream-busy when the queue
/// (upstream_queue 40: 20 per worker) is full or the wait (3 s) runs out.
///
/// Why the counts are exact: each response takes 2 s. Per worker, 100 clients arrive at once:
/// 5 connect, 20 queue, 75 are refused (queue-full). At 2 s the first 5 connections are parked
/// and taken by the first 5 waiters (waited 2 s < 3 s); the other 15 time out at 3 s, before
/// those connections come free again at 4 s. So 2 × (5 + 5) = 20 answered, 2 × 75 = 150
/// queue-full, 2 × 15 = 30 queue-timeout.
final class UpstreamCapTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private final class Concurrency: Sendable {
        private let state = Mutex<(now: Int, max: Int)>((0, 0))
        func enter() { state.withLock { $0.now += 1; $0.max = Swift.max($0.max, $0.now) } }
        func leave() { state.withLock { $0.now -= 1 } }
        var max: Int { state.withLock { $0.max } }
    }

    func testCapHoldsUnder200ConcurrentClients() throws {
        let inOrigin = Concurrency()
        let o = try TestOrigin(.respond { _ in
            inOrigin.enter()
            defer { inOrigin.leave() }
            usleep(2_000_000)
            return .ok("done")
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: [
            "max_connections_per_upstream": "10", "upstream_queue": "40", "upstream_queue_timeout": "3s",
            "upstream_timeout": "10s",
        ]) + "\nreachability: { interval: 1h }\n")   // no probe connection during the test
        airlock = a
        let port = a.port

        let clients = 200
        let outcomes = Mutex<[String]>([])
        let maxOpen = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let sampler = Thread {
            for _ in 0..<4000 where !done.load(ordering: .relaxed) {   // ≤ 20 s at 5 ms
                let n = o.openConnections
                if n > maxOpen.load(ordering: .relaxed) { maxOpen.store(n, ordering: .relaxed) }
                usleep(5_000)
            }
        }
        sampler.start()
        let group = DispatchGroup()
        for i in 0..<clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let outcome: String
                do {
                    let c = try RawClient(port: port, connectTimeout: 5)
                    defer { c.close() }
                    try c.send("GET /c\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
                    let r = try c.readResponse(timeout: 15)
                    if r.status == 200 {
                        outcome = "200"
                    } else {
                        let body = Fixture.json(r.body)
                        outcome = "\(r.status) \(body["error"] as? String ?? "-") \(body["reason"] as? String ?? "-")"
                            + (r.header("Retry-After") == nil ? " no-retry-after" : "")
                    }
                } catch {
                    outcome = "error \(error)"
                }
                outcomes.withLock { $0.append(outcome) }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "every client got an answer in time (no hang)")
        done.store(true, ordering: .relaxed)

        let all = outcomes.withLock { $0 }
        var tally: [String: Int] = [:]
        for x in all { tally[x, default: 0] += 1 }
        XCTAssertEqual(all.count, clients)
        XCTAssertEqual(tally["200"], 20, "\(tally)")
        XCTAssertEqual(tally["503 upstream-busy queue-full"], 150, "\(tally)")
        XCTAssertEqual(tally["503 upstream-busy queue-timeout"], 30, "\(tally)")
        XCTAssertLessThanOrEqual(inOrigin.max, 10, "requests in the origin at once")
        XCTAssertEqual(inOrigin.max, 10, "the cap is used, not just respected")
        XCTAssertLessThanOrEqual(maxOpen.load(ordering: .relaxed), 10, "connections open at the origin at once")
        XCTAssertLessThanOrEqual(o.acceptedConnections, 10, "served waiters reuse the parked connections")
    }
}
