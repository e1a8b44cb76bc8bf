import AirlockTesting
import Foundation
import Glibc
import XCTest

/// Access records with logging on (the default level), from the real binary's stdout: one per
/// request, in order per connection with the error records of that connection, all written
/// before `airlock.stopped` on SIGTERM, and a stdout that stops being read does not stall
/// requests (records are dropped, counted and reported in `airlock.log-dropped`).
final class AccessLogTests: XCTestCase {
    private func int(_ value: Any?) -> Int? {
        switch value {
        case let n as NSNumber: return n.intValue
        case let s as String: return Int(s)
        default: return nil
        }
    }

    private func event(_ r: [String: Any]) -> String { r["event"] as? String ?? "" }

    /// Good answers for every target but those under /bad/, which get a response with two
    /// conflicting Content-Lengths (a 502 and a `request.error` record).
    private func origin() throws -> TestOrigin {
        try TestOrigin(.raw { req in
            req.target.hasPrefix("/bad/")
                ? Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok".utf8)
                : Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        })
    }

    /// Waits (bounded) until the child has exited and its stdout reader has read everything.
    private func stopAndCollect(_ a: AirlockProcess) -> [[String: Any]] {
        a.signal(SIGTERM)
        XCTAssertNotNil(a.waitForExit(timeout: 20), "airlock exits after SIGTERM")
        XCTAssertNotNil(a.waitForLog(timeout: 10) { $0["event"] as? String == "airlock.stopped" })
        return a.logRecords()
    }

    /// 4 connections × 30 requests over 2 workers, every 5th one a 502: one access record per
    /// request, each connection's in the order it sent them, each error record just before
    /// the access record of its request.
    func testOneAccessRecordPerRequestInOrderPerConnection() throws {
        let o = try origin()
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 2))
        defer { a.stop() }
        var sent: [UInt16: [String]] = [:]   // client port -> targets in order
        var clients: [RawClient] = []
        defer { clients.forEach { $0.close() } }
        for _ in 0..<4 { clients.append(try RawClient(port: a.port)) }
        for i in 0..<30 {
            for (k, c) in clients.enumerated() {
                let target = i % 5 == 4 ? "/bad/c\(k)/r\(i)" : "/ok/c\(k)/r\(i)"
                let r = try c.exchange("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n")
                XCTAssertEqual(r.status, target.hasPrefix("/bad/") ? 502 : 200, target)
                XCTAssertNotEqual(r.header("connection")?.lowercased(), "close", "\(target) keeps the connection")
                sent[c.localPort, default: []].append(target)
            }
        }
        let records = stopAndCollect(a)
        var seen: [String: [String]] = [:]   // client -> targets of its access records
        var pendingError: [String: String] = [:]   // client -> request_id of an error record not yet followed
        for r in records where r["client"] != nil {
            let client = r["client"] as? String ?? "-"
            switch event(r) {
            case "request.error":
                XCTAssertNil(pendingError[client], "two error records in a row for \(client)")
                pendingError[client] = r["request_id"] as? String
            case "request.access":
                let target = r["target"] as? String ?? "-"
                if target.hasPrefix("/bad/") {
                    XCTAssertEqual(pendingError.removeValue(forKey: client), r["request_id"] as? String,
                                   "the error record of \(target) comes just before its access record")
                    XCTAssertEqual(int(r["status"]), 502)
                } else {
                    XCTAssertNil(pendingError[client], "\(target): an error record is followed by its own access record")
                    XCTAssertEqual(int(r["status"]), 200)
                }
                seen[client, default: []].append(target)
            default:
                break
            }
        }
        XCTAssertEqual(seen.values.map(\.count).reduce(0, +), 120, "one access record per request")
        for (port, targets) in sent {
            XCTAssertEqual(seen["127.0.0.1:\(port)"], targets, "records of the connection from port \(port), in order")
        }
    }

    /// Requests answered just before the process exits: quick ones before SIGTERM and slow
    /// ones still in flight when it arrives (answered during the drain, moments before exit).
    /// Every access record is on stdout, before `airlock.stopped`: nothing is left in a
    /// worker's buffer or the sink's queue at exit.
    func testRecordsWrittenJustBeforeSIGTERMAreAllPresent() throws {
        let o = try TestOrigin(.raw { req in
            if req.target.hasPrefix("/slow/") { usleep(400_000) }
            return Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        })
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["drain_timeout": "10s"], workers: 2))
        defer { a.stop() }
        let quick = try (0..<2).map { _ in try RawClient(port: a.port) }
        let slow = try (0..<16).map { _ in try RawClient(port: a.port) }
        defer { (quick + slow).forEach { $0.close() } }
        var targets: Set<String> = []
        for i in 0..<100 {
            for (k, c) in quick.enumerated() {
                let target = "/quick/c\(k)/r\(i)"
                XCTAssertEqual(try c.exchange("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n").status, 200)
                targets.insert(target)
            }
        }
        for (k, c) in slow.enumerated() {
            try c.send("GET /slow/\(k) HTTP/1.1\r\nHost: a\r\n\r\n")
            targets.insert("/slow/\(k)")
        }
        XCTAssertTrue(o.waitForRequests(200 + slow.count, timeout: 10), "the slow requests reached the origin")
        a.signal(SIGTERM)
        for c in slow { XCTAssertEqual(try c.readResponse(timeout: 10).status, 200, "in flight at SIGTERM: answered") }
        let records = stopAndCollect(a)
        let accessIndexes = records.indices.filter { event(records[$0]) == "request.access" }
        let logged = accessIndexes.compactMap { records[$0]["target"] as? String }
        XCTAssertEqual(logged.count, targets.count)
        XCTAssertEqual(Set(logged), targets, "every request's record is written")
        let stopped = records.firstIndex { event($0) == "airlock.stopped" }
        XCTAssertNotNil(stopped)
        if let stopped, let last = accessIndexes.last {
            XCTAssertLessThan(last, stopped, "access records come before airlock.stopped")
        }
    }

    /// Exchanges still in flight when the drain timeout passes are cut, and logged all the
    /// same, exactly once each: a `request.error` record with `drain-timeout` and an access
    /// record marked incomplete, both before `airlock.stopped`.
    func testExchangesCutByTheDrainTimeoutAreLoggedOnce() throws {
        let o = try TestOrigin(.raw { req in
            if req.target.hasPrefix("/stuck/") { usleep(3_000_000) }
            return Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        })
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["drain_timeout": "300ms"]))
        defer { a.stop() }
        let stuck = try (0..<3).map { _ in try RawClient(port: a.port) }
        defer { stuck.forEach { $0.close() } }
        for (k, c) in stuck.enumerated() { try c.send("GET /stuck/\(k) HTTP/1.1\r\nHost: a\r\n\r\n") }
        XCTAssertTrue(o.waitForRequests(3, timeout: 10), "the requests reached the origin")
        let records = stopAndCollect(a)
        let stopped = records.firstIndex { event($0) == "airlock.stopped" } ?? records.count
        for k in 0..<3 {
            let target = "/stuck/\(k)"
            let errors = records.indices.filter { event(records[$0]) == "request.error" && records[$0]["target"] as? String == target }
            let access = records.indices.filter { event(records[$0]) == "request.access" && records[$0]["target"] as? String == target }
            XCTAssertEqual(errors.count, 1, target)
            XCTAssertEqual(access.count, 1, target)
            guard let e = errors.first, let r = access.first else { continue }
            XCTAssertEqual(records[e]["error"] as? String, "drain-timeout")
            XCTAssertEqual(records[r]["incomplete"] as? Bool, true)
            XCTAssertEqual(records[r]["state"] as? String, "cancelled")
            XCTAssertLessThan(e, r, "the error record comes just before its access record")
            XCTAssertLessThan(r, stopped, "written before airlock.stopped")
        }
    }

    /// stdout stops being read: requests are still answered (each within its read timeout);
    /// records beyond the bound are dropped whole; once stdout is read again an
    /// `airlock.log-dropped` record counts them, and the records written plus those counted
    /// as dropped are exactly the requests served.
    func testStalledStdoutDoesNotStallRequestsAndDropsAreReported() throws {
        let o = try origin()
        defer { o.stop() }
        try PrometheusText.requireParser()
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1) + "\nadmin: 127.0.0.1:0\n")
        defer { a.stop() }
        let adminRecord = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let adminPort = UInt16(try XCTUnwrap(adminRecord["port"] as? Int))
        let c = try RawClient(port: a.port)
        defer { c.close() }
        // ~3.1 KB per record: 800 records are about twice what the pipe, the test's reader and
        // the 1 MiB queue can hold while nobody reads.
        let padding = String(repeating: "p", count: 3000)
        let total = 800
        a.pauseStdout(maxSeconds: 120)
        for i in 0..<total {
            let r = try c.exchange("GET /stall/\(i)/\(padding) HTTP/1.1\r\nHost: a\r\n\r\n")
            XCTAssertEqual(r.status, 200, "request \(i) is answered while stdout is not read")
            if r.status != 200 { break }
        }
        a.resumeStdout()
        let report = a.waitForLog(timeout: 10) { $0["event"] as? String == "airlock.log-dropped" }
        XCTAssertNotNil(report, "airlock.log-dropped once stdout is read again")
        XCTAssertGreaterThan(int(report?["dropped"]) ?? 0, 0)
        XCTAssertEqual(report?["level"] as? String, "warning")
        // The same count is exported for Prometheus.
        let admin = try RawClient(port: adminPort)
        let scraped = try PrometheusText(try admin.exchange("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n").body)
        admin.close()
        XCTAssertEqual(scraped.types["airlock_log_dropped_records"], "counter")
        XCTAssertEqual(scraped.value("airlock_log_dropped_records_total").map { Int($0) }, int(report?["dropped_total"]))
        let records = stopAndCollect(a)
        let written = records.filter { event($0) == "request.access" && ($0["target"] as? String)?.hasPrefix("/stall/") == true }
        let reports = records.filter { event($0) == "airlock.log-dropped" }
        let dropped = reports.compactMap { int($0["dropped"]) }.reduce(0, +)
        XCTAssertGreaterThan(written.count, 0)
        XCTAssertEqual(written.count + dropped, total, "records written (\(written.count)) + dropped (\(dropped))")
        XCTAssertEqual(int(reports.last?["dropped_total"]), dropped)
        // What was written is whole and in order (whole batches dropped, never parts of records).
        let serials = written.compactMap { ($0["target"] as? String)?.split(separator: "/").dropFirst().first.flatMap { Int($0) } }
        XCTAssertEqual(serials.count, written.count)
        XCTAssertEqual(serials, serials.sorted())
    }
}
