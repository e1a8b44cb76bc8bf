import AirlockTesting
import Foundation
import XCTest

/// Airlock as an HTTP proxy for real clients (`curl -x`), in front of real origins.
/// With `io_uring: auto` (the default: io_uring where the kernel allows it); the same
/// tests run again with `io_uring: off` in `ForwardProxySendPerStreamTests`.
class ForwardProxyTests: XCTestCase {
    /// The config's `io_uring` value.
    class var ioUring: String { "auto" }

    var origin: TestOrigin!
    var airlock: AirlockProcess!

    override func setUpWithError() throws {
        origin = try TestOrigin(.respond { req in
            switch req.target {
            case "/echo":
                return TestResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .bytes(req.body))
            case "/big":
                return TestResponse(status: 200, body: .pattern(count: 50 * 1024 * 1024))
            case "/chunked":
                return TestResponse(status: 200, body: .bytes(Array("chunked-body".utf8)), chunked: true)
            case "/nocontent":
                return TestResponse(status: 204, reason: "No Content")
            case "/notmodified":
                return TestResponse(status: 304, reason: "Not Modified", headers: [("ETag", "\"x\"")])
            default:
                return .ok("hello from origin")
            }
        })
        airlock = try Fixture.start(Fixture.forwardConfig(ioUring: Self.ioUring))
    }

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    var proxy: String { "http://127.0.0.1:\(airlock.port)" }
    var base: String { "http://127.0.0.1:\(origin.port)" }

    func testListeningRecordNamesTheSendMode() throws {
        let rec = airlock.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.listening" }
        let mode = rec?["send_batching"] as? String ?? "(none)"
        if Self.ioUring == "off" {
            XCTAssertEqual(mode, "send per stream (io_uring: off)")
        } else {
            // io_uring, or the reason the kernel refused it.
            XCTAssertTrue(mode == "io_uring" || mode.hasPrefix("send per stream (io_uring_setup: "), mode)
        }
    }

    /// Many small exchanges on many connections at once, so that loop iterations carry
    /// batches of writes: each client gets its own responses, in order.
    func testConcurrentClientsEachGetTheirOwnResponses() throws {
        let clients = try (0..<24).map { _ in try RawClient(port: airlock.port) }
        defer { for c in clients { c.close() } }
        for round in 0..<20 {
            for (i, c) in clients.enumerated() {
                let body = "c\(i)r\(round)"
                try c.send("POST \(base)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
            for (i, c) in clients.enumerated() {
                let r = try c.readResponse()
                XCTAssertEqual(r.status, 200)
                XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "c\(i)r\(round)")
            }
        }
        XCTAssertEqual(origin.requests.count, 24 * 20)
    }

    func testGetThroughProxy() throws {
        let r = try Curl.run(["-x", proxy, "\(base)/hello", "-H", "Proxy-Connection: keep-alive", "-H", "X-Custom: yes"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "hello from origin")
        let seen = try XCTUnwrap(origin.requests.first)
        XCTAssertEqual(seen.target, "/hello", "absolute-form must be re-encoded as origin-form")
        XCTAssertEqual(seen.header("Host"), "127.0.0.1:\(origin.port)")
        XCTAssertEqual(seen.header("X-Custom"), "yes")
        XCTAssertNil(seen.header("Proxy-Connection"), "hop-by-hop fields never reach the origin")
        XCTAssertTrue(seen.header("Via")?.hasPrefix("1.1 airlock-") ?? false, seen.rawHead)
        let access = airlock.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" }
        XCTAssertEqual(access?["status"] as? Int, 200)
        XCTAssertEqual(access?["route"] as? String, "default")
        XCTAssertEqual(access?["method"] as? String, "GET")
        XCTAssertNotNil(access?["request_id"])
        XCTAssertNotNil(access?["duration_ms"])
        XCTAssertEqual(access?["upstream"] as? String, "127.0.0.1:\(origin.port)")
    }

    /// Fields named by Connection are hop-by-hop (RFC 9110 7.6.1), `close` included: a
    /// field called Close does not reach the origin, nor one named in a longer list.
    func testFieldsNamedByConnectionNeverReachTheOrigin() throws {
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        let r1 = try c.exchange("GET \(base)/a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Kept: 1\r\n\r\n")
        XCTAssertEqual(r1.status, 200)
        let r2 = try c.exchange("GET \(base)/b HTTP/1.1\r\nHost: x\r\nClose: 1\r\nConnection: close\r\nX-Kept: 2\r\n\r\n")
        XCTAssertEqual(r2.status, 200)
        XCTAssertTrue(origin.waitForRequests(2, timeout: 5))
        let seen = origin.requests
        XCTAssertNil(seen[0].header("X-Hop"), seen[0].rawHead)
        XCTAssertEqual(seen[0].header("X-Kept"), "1")
        XCTAssertNil(seen[1].header("Close"), seen[1].rawHead)
        XCTAssertEqual(seen[1].header("X-Kept"), "2")
    }

    func testPostWithContentLength() throws {
        let r = try Curl.run(["-x", proxy, "\(base)/echo", "--data-binary", "name=airlock&x=1"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "name=airlock&x=1")
        XCTAssertEqual(origin.requests.first?.header("Content-Length"), "16")
    }

    func testPostWithChunkedBodyIsReframed() throws {
        let file = Fixture.tempFile("chunked-body.bin")
        let payload = patternBytes(count: 300_000)
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data(payload)))
        let out = Fixture.tempFile("chunked-echo.bin")
        let r = try Curl.run(["-x", proxy, "\(base)/echo", "-H", "Transfer-Encoding: chunked",
                              "--data-binary", "@\(file)", "-o", out])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        let req = try XCTUnwrap(origin.requests.first)
        XCTAssertTrue(req.wasChunked)
        XCTAssertEqual(req.body.count, payload.count)
        XCTAssertEqual(req.body, payload)
        XCTAssertEqual(try sha256Hex(file: out), try sha256Hex(payload))
    }

    func testFiftyMiBDownloadMatchesSHA256() throws {
        let out = Fixture.tempFile("big.bin")
        let r = try Curl.run(["-x", proxy, "\(base)/big", "-o", out], timeout: 120)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(try sha256Hex(file: out), try sha256Hex(patternBytes(count: 50 * 1024 * 1024)))
    }

    func testChunkedResponseRelayed() throws {
        let r = try Curl.run(["-x", proxy, "\(base)/chunked"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "chunked-body")
    }

    func testKeepAliveReuseOnBothSides() throws {
        // One curl, three URLs: one client connection, and Airlock reuses one upstream connection.
        let r = try Curl.run(["-x", proxy, "\(base)/a", "\(base)/b", "\(base)/c", "-w", "%{num_connects}\\n"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        // Each body is followed by curl's count of new connections for that transfer: the first
        // opens the one client connection to Airlock, the next two reuse it.
        let connects = r.stdoutString.components(separatedBy: "hello from origin").dropFirst()
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertEqual(connects, ["1", "0", "0"], "curl's num_connects per transfer: \(r.stdoutString)")
        XCTAssertEqual(origin.requests.count, 3)
        XCTAssertEqual(origin.acceptedConnections, 1, "upstream connection must be pooled and reused")
        // A second client: still the same pooled upstream connection, unless it landed on
        // another worker; never more than one per worker.
        _ = try Curl.run(["-x", proxy, "\(base)/d"])
        XCTAssertLessThanOrEqual(origin.acceptedConnections, 2)
        XCTAssertEqual(Set(origin.requests.map(\.connectionIndex)).count, origin.acceptedConnections)
    }

    func testHeadAnd204And304AreBodiless() throws {
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        let head = try c.exchange("HEAD \(base)/hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body.count, 0)
        XCTAssertEqual(head.header("Content-Length"), "17", "HEAD keeps the length of the GET body")
        let nc = try c.exchange("GET \(base)/nocontent HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        XCTAssertEqual(nc.status, 204)
        XCTAssertEqual(nc.body.count, 0)
        let nm = try c.exchange("GET \(base)/notmodified HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        XCTAssertEqual(nm.status, 304)
        XCTAssertEqual(nm.header("ETag"), "\"x\"")
        // The connection is still in sync: a normal request after the bodiless ones works.
        let ok = try c.exchange("GET \(base)/hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        XCTAssertEqual(String(decoding: ok.body, as: UTF8.self), "hello from origin")
    }

    func testPipelinedRequestsAnsweredInOrder() throws {
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        try c.send("GET \(base)/one HTTP/1.1\r\nHost: x\r\n\r\nPOST \(base)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET \(base)/three HTTP/1.1\r\nHost: x\r\n\r\n")
        let r1 = try c.readResponse()
        let r2 = try c.readResponse()
        let r3 = try c.readResponse()
        XCTAssertEqual(String(decoding: r1.body, as: UTF8.self), "hello from origin")
        XCTAssertTrue(r1.header("Via")?.hasPrefix("1.1 airlock-") ?? false, "responses carry our Via too")
        XCTAssertEqual(String(decoding: r2.body, as: UTF8.self), "abc")
        XCTAssertEqual(String(decoding: r3.body, as: UTF8.self), "hello from origin")
        XCTAssertEqual(origin.requests.map(\.target), ["/one", "/echo", "/three"])
    }

    /// A route without `connect:` denies CONNECT (the default); tunnels: `TunnelRelayTests`.
    func testConnectIsDeniedByDefault() throws {
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        let r = try c.exchange("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n",
                               method: "CONNECT")
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "connect-denied")
        XCTAssertEqual(origin.acceptedConnections, 0)
    }

    func testRequestToItselfIsALoop() throws {
        let r = try Curl.run(["-x", proxy, "http://127.0.0.1:\(airlock.port)/", "-w", "\\n%{http_code}"])
        XCTAssertTrue(r.stdoutString.hasSuffix("508"), r.stdoutString)
        let body = Fixture.json(Array(r.stdout.dropLast(4)))
        XCTAssertEqual(body["error"] as? String, "loop-detected")
        // Refused by this hop before connecting, not a 508 from an inner hop (Airlock connected to
        // itself, which saw its own Via) relayed back.
        XCTAssertTrue((body["message"] as? String ?? "").contains("own listener"), r.stdoutString)
        XCTAssertNotNil(airlock.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" })
        let errors = airlock.logRecords().filter { $0["event"] as? String == "request.error" }
        XCTAssertEqual(errors.count, 1, "one refusal: \(errors)")
        XCTAssertEqual(errors.first?["error"] as? String, "loop-detected", "\(errors)")
        XCTAssertTrue((errors.first?["message"] as? String ?? "").contains("own listener"), "\(errors)")
    }

    /// The 508 status line carries RFC 5842's reason phrase.
    func testALoopIsAnsweredWithLoopDetected() throws {
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        let r = try c.exchange("GET http://127.0.0.1:\(airlock.port)/loop HTTP/1.1\r\nHost: 127.0.0.1:\(airlock.port)\r\n\r\n")
        XCTAssertEqual(r.status, 508, r.bodyString)
        XCTAssertEqual(r.reason, "Loop Detected")
        XCTAssertTrue(r.raw.starts(with: Array("HTTP/1.1 508 Loop Detected\r\n".utf8)), String(decoding: r.raw, as: UTF8.self))
    }

    func testOwnViaTokenIsALoop() throws {
        _ = try Curl.run(["-x", proxy, "\(base)/hello"])
        let via = try XCTUnwrap(origin.requests.first?.header("Via"))
        let r = try Curl.run(["-x", proxy, "\(base)/hello", "-H", "Via: 1.1 other, \(via)", "-w", "\\n%{http_code}"])
        XCTAssertTrue(r.stdoutString.hasSuffix("508"), r.stdoutString)
        XCTAssertEqual(origin.requests.count, 1, "a looping request never reaches an upstream")
    }

    func testUpstreamRefusedIs502() throws {
        let port = unusedLoopbackPort()
        let r = try Curl.run(["-x", proxy, "http://127.0.0.1:\(port)/", "-w", "\\n%{http_code}"])
        XCTAssertTrue(r.stdoutString.hasSuffix("502"), r.stdoutString)
        let body = Fixture.json(Array(r.stdout.dropLast(4)))
        XCTAssertEqual(body["error"] as? String, "upstream-refused")
        XCTAssertNotNil(body["request_id"] as? String)
        XCTAssertNotNil(body["message"] as? String)
        let err = airlock.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" }
        XCTAssertEqual(err?["error"] as? String, "upstream-refused")
    }

    func testUnresolvableUpstreamIs502() throws {
        let r = try Curl.run(["-x", proxy, "http://no-such-host.invalid/", "-w", "\\n%{http_code}"], timeout: 40)
        XCTAssertTrue(r.stdoutString.hasSuffix("502"), r.stdoutString)
        XCTAssertEqual(Fixture.json(Array(r.stdout.dropLast(4)))["error"] as? String, "upstream-unresolvable")
    }
}

/// Every forward-proxy test again, with each write its own `send` (`io_uring: off`).
final class ForwardProxySendPerStreamTests: ForwardProxyTests {
    override class var ioUring: String { "off" }

    // Test discovery on Linux registers a class only for the test methods it declares; this
    // one makes it run every inherited test with `io_uring: off` as well.
    func testSendPerStreamIsInEffect() throws {
        let rec = airlock.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.listening" }
        XCTAssertEqual(rec?["send_batching"] as? String, "send per stream (io_uring: off)")
    }
}
