import AirlockTesting
import Foundation
import Synchronization
import XCTest

/// Hot reload (issue #20): SIGHUP, `POST /reload` and `airlock reload` read the file again,
/// refuse a bad one whole (the running configuration stays), refuse restart-only changes
/// naming the key, let exchanges in flight finish under what they started with, and drop no
/// request under load while pins rotate.
final class ReloadTests: XCTestCase {
    private var pki: TLSTestPKI!
    private var origin: TLSTestOrigin!
    private var plain: TestOrigin!
    private var airlock: AirlockProcess?

    override func setUpWithError() throws {
        pki = try TLSTestPKI.generate()
        origin = try TLSTestOrigin(pki: pki)
        plain = try TestOrigin(.respond { req in .ok("plain \(req.target)") })
    }

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
        plain?.stop()
        pki?.remove()
    }

    /// Route `tls` to the TLS origin pinned to `pin`'s public key (the test root as `ca`), and
    /// route `plain` (only with `withPlain`).
    private func yaml(pin: String, withPlain: Bool = false, extra: String = "", listen: String = "127.0.0.1:0",
                      workers: Int = 2) -> String {
        var text = """
            listen: \(listen)
            workers: \(workers)
            admin: 127.0.0.1:0
            \(Fixture.limitsYAML([:]))
            routes:
              - name: tls
                match: { host: tls.test }
                upstream: https://localhost:\(origin.port)
                security:
                  ca: "\(pki.path("root.pem"))"
                  pinning: public-key
                  pins: ["\(pki.pin(pin))"]
            """
        if withPlain {
            text += """

                  - name: plain
                    match: { host: plain.test }
                    upstream: http://127.0.0.1:\(plain.port)
                """
        }
        return text + extra + "\n"
    }

    private func start(_ yaml: String) throws -> (AirlockProcess, admin: UInt16) {
        let a = try Fixture.start(yaml)
        airlock = a
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return (a, UInt16(try XCTUnwrap(record["port"] as? Int)))
    }

    private func rewrite(_ a: AirlockProcess, _ yaml: String) throws {
        // Written whole to a new file, then renamed over the old: a reload never reads half a file.
        let next = a.configPath + ".next"
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: next))
        XCTAssertEqual(rename(next, a.configPath), 0)
    }

    private func post(_ admin: UInt16, _ path: String = "/reload") throws -> (RawResponse, [String: Any]) {
        let c = try RawClient(port: admin)
        defer { c.close() }
        let r = try c.exchange("POST \(path) HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                               method: "POST")
        return (r, Fixture.json(r.body))
    }

    private func get(_ a: AirlockProcess, host: String, _ path: String) throws -> RawResponse {
        let c = try RawClient(port: a.port)
        defer { c.close() }
        return try c.exchange("GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
    }

    func testAReloadTakesNewRoutesAndSaysWhatChanged() throws {
        let (a, admin) = try start(yaml(pin: "leaf"))
        XCTAssertEqual(try get(a, host: "plain.test", "/x").status, 403, "no route yet")
        try rewrite(a, yaml(pin: "intermediate", withPlain: true))
        let (r, body) = try post(admin)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(body["routes_added"] as? [String], ["plain"])
        XCTAssertEqual(body["routes_changed"] as? [String], ["tls"])
        XCTAssertEqual(body["generation"] as? Int, 1)
        let served = try get(a, host: "plain.test", "/x")
        XCTAssertEqual(served.status, 200)
        XCTAssertEqual(String(decoding: served.body, as: UTF8.self), "plain /x")
        XCTAssertEqual(try get(a, host: "tls.test", "/after").status, 200, "the rotated pin (intermediate) holds")
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.reloaded" })
        XCTAssertEqual(record["trigger"] as? String, "POST /reload")
        XCTAssertEqual(record["routes_added"] as? [String], ["plain"])

        // SIGHUP does the same without an answer; the route goes again.
        try rewrite(a, yaml(pin: "intermediate"))
        a.signal(SIGHUP)
        let hup = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "airlock.reloaded" && $0["trigger"] as? String == "SIGHUP"
        })
        XCTAssertEqual(hup["routes_removed"] as? [String], ["plain"])
        XCTAssertEqual(hup["generation"] as? Int, 2)
        XCTAssertEqual(try get(a, host: "plain.test", "/x").status, 403)
        XCTAssertNil(a.waitForExit(timeout: 0.2), "SIGHUP reloads, it does not stop Airlock")

        // `airlock reload`, as an operator types it.
        try rewrite(a, yaml(pin: "leaf", withPlain: true))
        let cli = try runProcess(AirlockProcess.builtExecutable(), ["reload", "--admin", "127.0.0.1:\(admin)"], timeout: 30)
        XCTAssertEqual(cli.exitCode, 0, cli.stderr)
        XCTAssertTrue(cli.stdoutString.contains("\"routes_added\":[\"plain\"]"), cli.stdoutString)
    }

    func testARefusedConfigurationKeepsTheRunningOneAndListsEveryError() throws {
        let (a, admin) = try start(yaml(pin: "leaf", withPlain: true))
        try rewrite(a, """
            listen: 127.0.0.1:0
            workers: 2
            admin: 127.0.0.1:0
            limits: { header_timeout: soon }
            routes:
              - name: plain
                match: { host: plain.test }
                upstream: nowhere
            """)
        let (r, body) = try post(admin)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(body["error"] as? String, "reload-failed")
        let keys = (body["issues"] as? [[String: Any]] ?? []).compactMap { $0["key_path"] as? String }
        XCTAssertEqual(Set(keys), ["limits.header_timeout", "routes[0].upstream"], "\(body)")
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.reload-failed" })
        XCTAssertEqual((record["issues"] as? [[String: Any]])?.count, 2)
        // The running configuration is untouched: both routes serve as before.
        XCTAssertEqual(try get(a, host: "plain.test", "/still").status, 200)
        XCTAssertEqual(try get(a, host: "tls.test", "/still").status, 200)
        // A file that names a certificate that is not there is refused too (opened as at start).
        try rewrite(a, yaml(pin: "leaf").replacingOccurrences(of: pki.path("root.pem"), with: "/nonexistent/root.pem"))
        let (missing, mbody) = try post(admin)
        XCTAssertEqual(missing.status, 400)
        let mkeys = (mbody["issues"] as? [[String: Any]] ?? []).compactMap { $0["key_path"] as? String }
        XCTAssertEqual(mkeys.first?.hasPrefix("routes[0].security"), true, "\(mbody)")
        XCTAssertEqual(try get(a, host: "plain.test", "/still").status, 200)
    }

    func testRestartOnlySettingsAreRefusedNamingTheKey() throws {
        let (a, admin) = try start(yaml(pin: "leaf"))
        try rewrite(a, yaml(pin: "leaf", listen: "127.0.0.1:\(unusedLoopbackPort())", workers: 3))
        let (r, body) = try post(admin)
        XCTAssertEqual(r.status, 400)
        let issues = body["issues"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(issues.compactMap { $0["key_path"] as? String }), ["listen", "workers"], "\(body)")
        XCTAssertTrue(issues.allSatisfy { ($0["message"] as? String)?.contains("without a restart") == true }, "\(body)")
        XCTAssertEqual(try get(a, host: "tls.test", "/same").status, 200, "still listening where it was")
    }

    /// An exchange in flight finishes under the pins it started with; the next one meets the
    /// new pins on a new connection (the old pooled one is never reused across the change).
    func testAnExchangeInFlightFinishesUnderTheOldPins() throws {
        let (a, admin) = try start(yaml(pin: "leaf"))
        XCTAssertEqual(try get(a, host: "tls.test", "/warm").status, 200, "a pooled connection under the leaf pin")
        let result = Mutex<RawResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let port = a.port
        Thread.detachNewThread {
            defer { done.signal() }
            guard let c = try? RawClient(port: port) else { return }
            defer { c.close() }
            let r = try? c.exchange("GET /slow/1500 HTTP/1.1\r\nHost: tls.test\r\nConnection: close\r\n\r\n")
            result.withLock { $0 = r }
        }
        XCTAssertTrue(origin.waitForRequests(2, timeout: 5), "the slow request reached the origin")
        try rewrite(a, yaml(pin: "other-root"))   // a pin nothing in the chain matches
        let (r, _) = try post(admin)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        let inFlight = try XCTUnwrap(result.withLock { $0 })
        XCTAssertEqual(inFlight.status, 200, "finished under the pins it started with")
        XCTAssertEqual(String(decoding: inFlight.body, as: UTF8.self), "hello over tls /slow/1500")
        let after = try get(a, host: "tls.test", "/after")
        XCTAssertEqual(after.status, 502, "the new pins hold for the next exchange")
        XCTAssertEqual(Fixture.json(after.body)["error"] as? String, "untrusted-upstream")
        XCTAssertTrue(origin.receivesNoRequest(beyond: 2, within: 0.5), "/after never reached the origin")
    }

    /// A CA file rotated in place (same path, other contents): the pooled connection verified
    /// under the old CA is not reused, and the new CA is read again (no cached TLS context).
    func testACAFileRotatedInPlaceIsReadAgainAndItsPooledConnectionsDropped() throws {
        let caFile = NSTemporaryDirectory() + "airlock-reload-ca-\(UUID().uuidString).pem"
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        try FileManager.default.copyItem(atPath: pki.path("root.pem"), toPath: caFile)
        let config = """
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:0
            \(Fixture.limitsYAML([:]))
            routes:
              - name: tls
                match: { host: tls.test }
                upstream: https://localhost:\(origin.port)
                security: { ca: "\(caFile)" }
            """
        let (a, admin) = try start(config)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        XCTAssertEqual(try c.exchange("GET /one HTTP/1.1\r\nHost: tls.test\r\n\r\n").status, 200)
        XCTAssertEqual(origin.acceptedConnections, 1)
        try FileManager.default.removeItem(atPath: caFile)
        try FileManager.default.copyItem(atPath: pki.path("other-root.pem"), toPath: caFile)
        let (r, _) = try post(admin)
        XCTAssertEqual(r.status, 200)
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.reloaded" })
        XCTAssertEqual(record["pooled_trust_dropped"] as? Int, 1)
        let after = try c.exchange("GET /two HTTP/1.1\r\nHost: tls.test\r\n\r\n")
        XCTAssertEqual(after.status, 502, "the origin's chain does not lead to the new CA")
        XCTAssertEqual(Fixture.json(after.body)["reason"] as? String, "untrusted-chain")
        XCTAssertTrue(origin.receivesNoRequest(beyond: 1, within: 0.5), "/two never went over the old connection")
    }

    /// 20 reloads, each rotating the route's pin between two that hold, while 64 keep-alive
    /// clients send requests: every request gets its 200, no connection fails.
    func testTwentyReloadsUnderLoadDropNothing() throws {
        let (a, admin) = try start(yaml(pin: "leaf"))
        let clients = 64
        let stop = Atomic<Bool>(false)
        let ok = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        let port = a.port
        for i in 0..<clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let c = try RawClient(port: port)
                    defer { c.close() }
                    var n = 0
                    while !stop.load(ordering: .relaxed), n < 2_000 {
                        let r = try c.exchange("GET /load/\(i)/\(n) HTTP/1.1\r\nHost: tls.test\r\n\r\n")
                        guard r.status == 200 else {
                            failures.withLock { $0.append("client \(i) request \(n): \(r.status) \(String(decoding: r.body, as: UTF8.self))") }
                            return
                        }
                        ok.add(1, ordering: .relaxed)
                        n += 1
                    }
                } catch {
                    failures.withLock { $0.append("client \(i): \(error)") }
                }
            }
        }
        var reloads = 0
        let deadline = Date().addingTimeInterval(60)
        for round in 0..<20 where Date() < deadline {
            Thread.sleep(forTimeInterval: 0.15)
            try rewrite(a, yaml(pin: round % 2 == 0 ? "intermediate" : "leaf"))
            let (r, body) = try post(admin)
            XCTAssertEqual(r.status, 200, "\(body)")
            if r.status == 200 { reloads += 1 }
        }
        Thread.sleep(forTimeInterval: 0.3)
        stop.store(true, ordering: .relaxed)
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "every client finished")
        XCTAssertEqual(reloads, 20)
        XCTAssertEqual(failures.withLock { $0 }, [], "failed requests or connections")
        XCTAssertGreaterThan(ok.load(ordering: .relaxed), clients * 2, "requests kept flowing")
        print("ReloadTests: \(reloads) reloads, \(ok.load(ordering: .relaxed)) requests from \(clients) connections, "
              + "\(failures.withLock { $0.count }) failures")
    }
}
