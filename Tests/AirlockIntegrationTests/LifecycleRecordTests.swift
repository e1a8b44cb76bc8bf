import AirlockTesting
import Foundation
import Glibc
import XCTest

/// The lifecycle records the README lists (`airlock.config`, `airlock.admin`, `airlock.listening`,
/// `airlock.signal`, `airlock.draining`, `airlock.stopped`, `airlock.open-proxy`, `airlock.failed`), each
/// asserted by name and key fields, from the real binary's stdout; and `limits.drain_timeout` cutting off
/// in-flight work on SIGTERM.
final class LifecycleRecordTests: XCTestCase {
    /// An integer field, whether the log wrote it as a number or a string.
    private func int(_ value: Any?) -> Int? {
        switch value {
        case let n as NSNumber: return n.intValue
        case let s as String: return Int(s)
        default: return nil
        }
    }

    private func index(of event: String, in records: [[String: Any]]) -> Int? {
        records.firstIndex { $0["event"] as? String == event }
    }

    func testRecordsOfARunEndedBySIGTERM() throws {
        let origin = try TestOrigin(.respond { _ in .ok("ok") })
        defer { origin.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:0
            \(Fixture.limitsYAML([:]))
            routes:
              - name: api
                match: { host: api.test }
                upstream: http://127.0.0.1:\(origin.port)
              - name: rest
                match: { host: "*" }
                upstream: http://127.0.0.1:\(origin.port)
            """)
        defer { a.stop() }
        let all = a.logLines.joined(separator: "\n")

        let config = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.config" }, all)
        XCTAssertEqual(config["source"] as? String, a.configPath)
        XCTAssertEqual(config["listen"] as? String, "127.0.0.1:0")
        XCTAssertEqual(int(config["workers"]), 1)
        XCTAssertEqual(int(config["routes"]), 2)

        let admin = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" }, all)
        XCTAssertEqual(admin["address"] as? String, "127.0.0.1")
        let adminPort = try XCTUnwrap(int(admin["port"]), "\(admin)")
        XCTAssertNotEqual(adminPort, 0)
        XCTAssertNotEqual(adminPort, Int(a.port))
        // The port it names is the admin listener.
        let c = try RawClient(port: UInt16(adminPort))
        XCTAssertEqual(try c.exchange("GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n").status, 200)
        c.close()

        let listening = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.listening" }, all)
        XCTAssertEqual(listening["address"] as? String, "127.0.0.1")
        XCTAssertEqual(int(listening["port"]), Int(a.port))
        XCTAssertEqual(int(listening["workers"]), 1)
        XCTAssertEqual(int(listening["routes"]), 2)
        XCTAssertFalse((listening["send_batching"] as? String ?? "").isEmpty, "\(listening)")
        // The process allocates with mimalloc (linked ahead of glibc's malloc), and says so.
        XCTAssertTrue((listening["allocator"] as? String ?? "").hasPrefix("mimalloc 2."), "\(listening)")

        a.signal(SIGTERM)
        XCTAssertEqual(a.waitForExit(timeout: 15), 0, "exit status after SIGTERM")
        let signal = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.signal" }, a.logLines.joined(separator: "\n"))
        XCTAssertEqual(int(signal["signal"]), Int(SIGTERM))
        let draining = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.draining" })
        XCTAssertTrue((draining["drain_timeout"] as? String ?? "").hasPrefix("10"), "the default 10s: \(draining)")
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.stopped" })

        let records = a.logRecords()
        let order = ["airlock.config", "airlock.admin", "airlock.listening", "airlock.signal", "airlock.draining", "airlock.stopped"]
        let positions = order.map { index(of: $0, in: records) ?? -1 }
        XCTAssertEqual(positions, positions.sorted(), "records out of order: \(zip(order, positions).map { "\($0)@\($1)" })")
        XCTAssertFalse(positions.contains(-1))
        XCTAssertNil(index(of: "airlock.failed", in: records))
        XCTAssertNil(index(of: "airlock.open-proxy", in: records), "a loopback listener is no open proxy")
        for r in records where (r["event"] as? String ?? "").hasPrefix("airlock.") {
            XCTAssertNotNil(r["time"] as? String, "\(r)")
            XCTAssertNotNil(r["level"] as? String, "\(r)")
        }
    }

    /// Runs `airlock run --config` with `yaml` to completion (it must fail to start) and returns its result
    /// and its JSON records.
    private func failedStart(_ yaml: String) throws -> (ProcessResult, [[String: Any]]) {
        let path = Fixture.tempFile("lifecycle-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
        let result = try runProcess(AirlockProcess.builtExecutable(), ["run", "--config", path], timeout: 30)
        let records = result.stdoutString.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        return (result, records)
    }

    /// `allow_open_proxy` on a wildcard listener: `airlock.open-proxy` names it; the port is already taken on
    /// 127.0.0.1, so the bind fails (nothing is ever bound beyond loopback) and `airlock.failed` says why.
    func testOpenProxyWarningThenFailedStart() throws {
        let taken = try TestOrigin(.closeImmediately)
        defer { taken.stop() }
        let (result, records) = try failedStart("""
            listen: 0.0.0.0:\(taken.port)
            workers: 1
            admin: off
            allow_open_proxy: true
            routes:
              - name: default
                match: { host: "*" }
                upstream: origin
            """)
        let all = "stdout: \(result.stdoutString)\nstderr: \(result.stderr)"
        XCTAssertEqual(result.exitCode, 1, all)
        let config = try XCTUnwrap(records.first { $0["event"] as? String == "airlock.config" }, all)
        XCTAssertEqual(config["listen"] as? String, "0.0.0.0:\(taken.port)")
        let openProxy = try XCTUnwrap(records.first { $0["event"] as? String == "airlock.open-proxy" }, all)
        XCTAssertEqual(openProxy["listen"] as? String, "0.0.0.0:\(taken.port)")
        XCTAssertEqual(openProxy["level"] as? String, "warning")
        let failed = try XCTUnwrap(records.first { $0["event"] as? String == "airlock.failed" }, all)
        XCTAssertEqual(failed["level"] as? String, "critical")
        XCTAssertTrue((failed["error"] as? String ?? "").lowercased().contains("in use"), "\(failed)")
        XCTAssertNil(records.first { $0["event"] as? String == "airlock.listening" }, all)
        let events = records.compactMap { $0["event"] as? String }
        XCTAssertLessThan(events.firstIndex(of: "airlock.open-proxy") ?? .max, events.firstIndex(of: "airlock.failed") ?? -1, all)
        XCTAssertEqual(taken.acceptedConnections, 0)
    }

    /// A loopback listener whose port is taken: `airlock.failed` with the error, exit 1, no open-proxy warning.
    func testFailedStartOnATakenLoopbackPort() throws {
        let taken = try TestOrigin(.closeImmediately)
        defer { taken.stop() }
        let (result, records) = try failedStart("""
            listen: 127.0.0.1:\(taken.port)
            workers: 1
            admin: off
            routes:
              - name: default
                match: { host: "*" }
                upstream: origin
            """)
        let all = "stdout: \(result.stdoutString)\nstderr: \(result.stderr)"
        XCTAssertEqual(result.exitCode, 1, all)
        let failed = try XCTUnwrap(records.first { $0["event"] as? String == "airlock.failed" }, all)
        XCTAssertTrue((failed["error"] as? String ?? "").contains("127.0.0.1"), "the error names the address: \(failed)")
        XCTAssertTrue(result.stderr.contains("airlock: "), all)
        XCTAssertNil(records.first { $0["event"] as? String == "airlock.open-proxy" }, all)
        XCTAssertNil(records.first { $0["event"] as? String == "airlock.listening" }, all)
    }

    /// A configuration with several problems: besides the `keyPath: message` lines on stderr, one
    /// `airlock.failed` record on stdout lists every problem with its key path; exit 1.
    func testAnInvalidConfigurationWritesOneFailedRecordWithEveryIssue() throws {
        let (result, records) = try failedStart("""
            listen: 127.0.0.1:0
            workers: 999
            admin: off
            routes:
              - name: default
                match: { host: "*" }
                upstream: origin
              - name: api
                match: { host: api.test }
                upstream: http://user@api.test/path
            """)
        let all = "stdout: \(result.stdoutString)\nstderr: \(result.stderr)"
        XCTAssertEqual(result.exitCode, 1, all)
        let stderrKeyPaths = result.stderr.split(separator: "\n").compactMap { $0.split(separator: ":").first.map(String.init) }
        XCTAssertEqual(stderrKeyPaths.sorted(), ["routes[1].upstream", "workers"], "stderr as before: \(all)")
        let failed = records.filter { $0["event"] as? String == "airlock.failed" }
        XCTAssertEqual(failed.count, 1, all)
        XCTAssertEqual(failed.first?["level"] as? String, "critical", all)
        let issues = failed.first?["issues"] as? [[String: Any]] ?? []
        XCTAssertEqual(issues.compactMap { $0["key_path"] as? String }, stderrKeyPaths, all)
        for (issue, line) in zip(issues, result.stderr.split(separator: "\n")) {
            XCTAssertEqual("\(issue["key_path"] ?? ""): \(issue["message"] ?? "")", String(line), "the same words as stderr")
        }
        let error = failed.first?["error"] as? String ?? ""
        XCTAssertTrue(error.contains("workers: ") && error.contains("routes[1].upstream: "), "\(failed)")
        XCTAssertNil(records.first { $0["event"] as? String == "airlock.config" }, all)
    }

    /// A configured admin address that cannot be bound fails the start, and the error names the
    /// `admin` key (not only the address).
    func testATakenAdminAddressFailsTheStartNamingTheAdminKey() throws {
        let taken = try TestOrigin(.closeImmediately)
        defer { taken.stop() }
        let (result, records) = try failedStart("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:\(taken.port)
            routes:
              - name: default
                match: { host: "*" }
                upstream: origin
            """)
        let all = "stdout: \(result.stdoutString)\nstderr: \(result.stderr)"
        XCTAssertEqual(result.exitCode, 1, all)
        let failed = try XCTUnwrap(records.first { $0["event"] as? String == "airlock.failed" }, all)
        let error = failed["error"] as? String ?? ""
        XCTAssertTrue(error.hasPrefix("admin: "), "the error names the key: \(failed)")
        XCTAssertTrue(error.contains("127.0.0.1:\(taken.port)") && error.lowercased().contains("in use"), "\(failed)")
        XCTAssertEqual((failed["issues"] as? [[String: Any]])?.first?["key_path"] as? String, "admin", "\(failed)")
        XCTAssertTrue(result.stderr.contains("airlock: admin: "), all)
        XCTAssertNil(records.first { $0["event"] as? String == "airlock.listening" }, all)
        XCTAssertEqual(taken.acceptedConnections, 0)
    }

    /// SIGTERM with an exchange in flight that outlives `drain_timeout`: Airlock waits that long, then cuts
    /// the exchange off (the client never gets the upstream's answer, its connection closes) and stops.
    func testDrainTimeoutCutsOffInFlightExchange() throws {
        let origin = try TestOrigin(.silent)   // reads the request, never answers
        defer { origin.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: origin.port,
                                                        limits: ["drain_timeout": "1s", "upstream_timeout": "60s"]))
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /in-flight HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(origin.waitForRequests(1, timeout: 10), "the request never reached the origin")
        let signalled = Date()
        a.signal(SIGTERM)
        // The client's connection ends when Airlock cuts the exchange off: bounded well below
        // upstream_timeout (60 s), so only the drain timeout can end it in time.
        let reply = try c.readUntilClose(timeout: 20)
        let waited = Date().timeIntervalSince(signalled)
        let text = String(decoding: reply, as: UTF8.self)
        XCTAssertGreaterThanOrEqual(waited, 0.9, "cut off before drain_timeout: the in-flight exchange got no grace: \(text)")
        XCTAssertFalse(text.hasPrefix("HTTP/1.1 2"), "a cut-off exchange is no success: \(text)")
        let status = a.waitForExit(timeout: 10)
        let all = a.logLines.joined(separator: "\n")
        XCTAssertNotNil(status, "still running 10 s after the cut-off\n\(all)")
        let records = a.logRecords()
        let draining = index(of: "airlock.draining", in: records)
        let stopped = index(of: "airlock.stopped", in: records)
        XCTAssertNotNil(draining, all)
        XCTAssertNotNil(stopped, "airlock.stopped must follow the cut-off\n\(all)")
        XCTAssertLessThan(draining ?? .max, stopped ?? -1, all)
    }
}
