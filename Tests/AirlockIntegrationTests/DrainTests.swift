import AirlockTesting
import Foundation
import Synchronization
import XCTest

/// SIGTERM drains gracefully (issue #11, item 5): every request a client managed to send is
/// answered, in-flight responses carry `Connection: close`, idle connections close at once.
final class DrainTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    /// What one wrk-style connection loop saw.
    struct Tally: Sendable {
        var sent = 0
        var answered = 0
        var closeAnnounced = 0
        var reconnects = 0
        var lost: [String] = []
    }

    /// 64 connections each send a request as soon as the previous response is read (and
    /// reconnect after a `Connection: close`, as wrk does); SIGTERM arrives mid-run.
    func testSigtermUnderLoadAnswersEveryRequestSent() throws {
        let o = try TestOrigin(.respond { r in .ok("ok \(r.target)") })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["drain_timeout": "10s"]))
        airlock = a
        let port = a.port
        let connections = 64
        let stop = Atomic<Bool>(false)
        let tallies = Mutex<[Tally]>([])
        let group = DispatchGroup()
        for n in 0..<connections {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var t = Tally()
                var client: RawClient? = try? RawClient(port: port, connectTimeout: 2)
                let deadline = Date().addingTimeInterval(20)
                var i = 0
                while let c = client, Date() < deadline {
                    let path = "/c\(n)/r\(i)"
                    i += 1
                    // A send that fails met a connection already closed: nothing was sent.
                    guard (try? c.send("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\r\n", timeout: 2)) != nil else { break }
                    t.sent += 1
                    do {
                        let r = try c.readResponse(timeout: 12)
                        guard r.status == 200, String(decoding: r.body, as: UTF8.self) == "ok \(path)" else {
                            t.lost.append("\(path): \(r.status)")
                            break
                        }
                        t.answered += 1
                        if r.header("Connection")?.lowercased() == "close" {
                            t.closeAnnounced += 1
                            c.close()
                            // wrk reconnects; after the drain began the listener is gone.
                            client = try? RawClient(port: port, connectTimeout: 2)
                            if client != nil { t.reconnects += 1 }
                        }
                    } catch {
                        t.lost.append("\(path): \(error)")
                        break
                    }
                    if stop.load(ordering: .relaxed) && client == nil { break }
                }
                client?.close()
                tallies.withLock { $0.append(t) }
            }
        }
        // Let the load run, then signal mid-run.
        XCTAssertTrue(o.waitForRequests(2000, timeout: 15), "load reached the origin")
        a.signal(SIGTERM)
        let status = a.waitForExit(timeout: 15)
        stop.store(true, ordering: .relaxed)
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "every client loop ended")
        XCTAssertEqual(status, 0, "airlock exited cleanly after the drain")

        let all = tallies.withLock { $0 }
        XCTAssertEqual(all.count, connections)
        let sent = all.reduce(0) { $0 + $1.sent }, answered = all.reduce(0) { $0 + $1.answered }
        let lost = all.flatMap(\.lost)
        XCTAssertEqual(lost, [], "\(lost.count) of \(sent) requests sent got no answer")
        XCTAssertEqual(answered, sent)
        XCTAssertGreaterThan(all.reduce(0) { $0 + $1.closeAnnounced }, 0, "responses in flight at the signal said Connection: close")
        XCTAssertNotNil(a.waitForLog(timeout: 1) { ($0["event"] as? String) == "airlock.stopped" })
        XCTAssertNil(a.logRecords().first { ($0["event"] as? String) == "airlock.drain-timeout" },
                     "the drain finished well within drain_timeout")
    }

    /// Idle keep-alive clients do not hold the drain: Airlock closes them at once and exits
    /// far inside drain_timeout (10 s here).
    func testIdleKeepAliveConnectionsCloseAtOnce() throws {
        let o = try TestOrigin(.respond { _ in .ok("x") })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["drain_timeout": "10s"]))
        airlock = a
        var clients: [RawClient] = []
        defer { for c in clients { c.close() } }
        for i in 0..<20 {
            let c = try RawClient(port: a.port)
            XCTAssertEqual(try c.exchange("GET /\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n").status, 200)
            clients.append(c)
        }
        usleep(300_000)   // idle for longer than the drain's grace for just-answered clients
        let start = Date()
        a.signal(SIGTERM)
        XCTAssertEqual(a.waitForExit(timeout: 12), 0)
        let took = Date().timeIntervalSince(start)
        XCTAssertLessThan(took, 2, "an idle Airlock exits at once, not after drain_timeout (took \(took) s)")
        for c in clients { XCTAssertTrue(c.isClosedByPeer(timeout: 2)) }
    }

    /// A response in flight when the drain begins is finished, and says `Connection: close`.
    func testResponseInFlightCarriesConnectionClose() throws {
        let o = try TestOrigin(.respond { _ in
            usleep(500_000)
            return .ok("slow")
        })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["drain_timeout": "10s"]))
        airlock = a
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(o.waitForRequests(1, timeout: 5))
        a.signal(SIGTERM)
        let r = try c.readResponse(timeout: 10)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "slow")
        XCTAssertEqual(r.header("Connection")?.lowercased(), "close")
        XCTAssertTrue(c.isClosedByPeer(timeout: 5))
        XCTAssertEqual(a.waitForExit(timeout: 10), 0)
    }
}
