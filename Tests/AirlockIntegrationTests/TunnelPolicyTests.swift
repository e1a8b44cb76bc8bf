import AirlockTesting
import Foundation
import XCTest

/// CONNECT policy end to end with a real Airlock and a raw client: deny, no route, a port
/// outside `connect_ports`, a route with a path, every malformed target (400, one connection
/// per case), a CONNECT with a body, and an intercept route's 200. Nothing reaches an upstream.
final class TunnelPolicyTests: XCTestCase {
    private var airlock: AirlockProcess!
    private var upstream: TCPTestServer!
    private var caDir = ""

    override func setUpWithError() throws {
        upstream = try TCPTestServer { c in _ = try? c.readToEnd(timeout: 5) }
        caDir = NSTemporaryDirectory() + "airlock-policy-ca-\(UUID().uuidString)"
        let made = try runProcess(AirlockProcess.builtExecutable(), ["ca", "init", "--dir", caDir])
        XCTAssertEqual(made.exitCode, 0, made.stderr)
        airlock = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            ca:
              certificate: \(caDir)/airlock-ca.pem
              key: \(caDir)/airlock-ca.key
            routes:
              - name: denied
                match: { host: denied.test }
                upstream: origin
              - name: intercepted
                match: { host: intercept.test }
                connect: intercept
                upstream: origin
              - name: withpath
                match: { host: path.test, path_prefix: /v1 }
                connect: tunnel
                upstream: origin
              - name: local
                match: { host: "127.0.0.1" }
                connect: tunnel
                connect_ports: [\(upstream.port)]
                upstream: origin
            """)
    }

    override func tearDown() {
        airlock?.stop()
        upstream?.stop()
        try? FileManager.default.removeItem(atPath: caDir)
    }

    /// One CONNECT on a fresh connection; the response, and whether Airlock closed after it.
    private func connect(_ target: String, extra: String = "") throws -> (RawResponse, [String: Any], closed: Bool) {
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        let r = try c.exchange("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\(extra)\r\n", method: "CONNECT")
        return (r, Fixture.json(r.body), c.isClosedByPeer(timeout: 5))
    }

    func testDenyIsTheDefault() throws {
        let (r, body, closed) = try connect("denied.test:443")
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(body["error"] as? String, "connect-denied")
        XCTAssertEqual(body["host"] as? String, "denied.test")
        XCTAssertEqual(body["route"] as? String, "denied")
        XCTAssertTrue(closed, "a refused CONNECT closes the connection")
    }

    /// curl shows only "CONNECT tunnel failed, response 403" for a refused CONNECT: the reason
    /// is in a header too (`X-Airlock-Error`), which `curl -v` prints, as it is on every answer
    /// Airlock makes itself.
    func testTheRefusalReasonIsInAHeaderForCurl() throws {
        try Requirement.tool(Curl.executable)
        let r = try Curl.run(["-v", "-x", "http://127.0.0.1:\(airlock.port)", "https://denied.test/"])
        XCTAssertNotEqual(r.exitCode, 0)
        XCTAssertTrue(r.stderr.contains("< X-Airlock-Error: connect-denied"), r.stderr)
        let port = try Curl.run(["-v", "-x", "http://127.0.0.1:\(airlock.port)", "https://127.0.0.1:444/"])
        XCTAssertTrue(port.stderr.contains("< X-Airlock-Error: connect-port-denied"), port.stderr)
        let plain = try Curl.run(["-v", "-o", "/dev/null", "-x", "http://127.0.0.1:\(airlock.port)", "http://nowhere.test/"])
        XCTAssertTrue(plain.stderr.contains("< X-Airlock-Error: no-route"), plain.stderr)
    }

    func testNoRouteIs403() throws {
        let (r, body, _) = try connect("nowhere.test:443")
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(body["error"] as? String, "no-route")
        XCTAssertEqual(body["host"] as? String, "nowhere.test")
        // A route with a path never takes a CONNECT, even with connect: tunnel.
        let (p, pbody, _) = try connect("path.test:443")
        XCTAssertEqual(p.status, 403)
        XCTAssertEqual(pbody["error"] as? String, "no-route")
    }

    func testPortOutsideConnectPortsIs403() throws {
        let (r, body, _) = try connect("127.0.0.1:443")
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(body["error"] as? String, "connect-port-denied")
        XCTAssertEqual(body["port"] as? Int, 443)
        XCTAssertEqual(upstream.acceptedCount, 0)
        // A listener that exists, outside connect_ports: the refusal comes before any connect,
        // so it accepts nothing (nobody listens on 443, where no count could move).
        let outside = try TCPTestServer { c in _ = try? c.readToEnd(timeout: 5) }
        defer { outside.stop() }
        let (o, obody, closed) = try connect("127.0.0.1:\(outside.port)")
        XCTAssertEqual(o.status, 403)
        XCTAssertEqual(obody["error"] as? String, "connect-port-denied")
        XCTAssertEqual(obody["port"] as? Int, Int(outside.port))
        XCTAssertTrue(closed, "a refused CONNECT closes the connection")
        XCTAssertFalse(outside.waitForAccepted(1, timeout: 0.5), "Airlock connected to a port outside connect_ports")
    }

    func testMalformedTargetsAre400() throws {
        let cases = [
            "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:99999", "127.0.0.1:44x",
            "user@127.0.0.1:\(upstream.port)", "u:p@127.0.0.1:\(upstream.port)", "127.0.0.1:\(upstream.port)/",
            "127.0.0.1:\(upstream.port)/path", "127.0.0.1:\(upstream.port)?q", "::1:443", "[::1]", ":443",
            "http://127.0.0.1:\(upstream.port)", "/", "*",
        ]
        for target in cases {
            let c = try RawClient(port: airlock.port)
            defer { c.close() }
            let r = try c.exchange("CONNECT \(target) HTTP/1.1\r\nHost: h\r\n\r\n", method: "CONNECT")
            XCTAssertEqual(r.status, 400, target)
            XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "invalid-connect-target", target)
            XCTAssertTrue(c.isClosedByPeer(timeout: 5), target)
        }
        XCTAssertEqual(upstream.acceptedCount, 0)
    }

    func testConnectWithABodyIs400() throws {
        for framing in ["Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n"] {
            let (r, body, closed) = try connect("127.0.0.1:\(upstream.port)", extra: framing)
            XCTAssertEqual(r.status, 400, framing)
            XCTAssertEqual(body["error"] as? String, "connect-with-body", framing)
            XCTAssertTrue(closed)
        }
        XCTAssertEqual(upstream.acceptedCount, 0)
    }

    /// `intercept` answers 200 and waits for a ClientHello (the TLS part: InterceptTests); with
    /// none, the handshake is cut at header_timeout and logged.
    func testInterceptAnswers200ThenWaitsForTheClientHello() throws {
        let (r, _, closed) = try connect("intercept.test:443")
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(closed, "no ClientHello: closed at header_timeout (2 s here)")
        let failed = airlock.waitForLog(timeout: 5) { $0["event"] as? String == "connect.tls-failed" }
        XCTAssertEqual(failed?["route"] as? String, "intercepted")
        XCTAssertEqual(failed?["target"] as? String, "intercept.test:443")
    }

    /// A refused CONNECT's access record names the authority it asked for as its target.
    func testRefusedConnectRecordsNameTheConnectAuthority() throws {
        for (target, status) in [("denied.test:443", 403), ("nowhere.test:8443", 403), ("127.0.0.1:443", 403)] {
            let (r, _, _) = try connect(target)
            XCTAssertEqual(r.status, status, target)
            let record = airlock.waitForLog(timeout: 5) {
                $0["event"] as? String == "request.access" && $0["method"] as? String == "CONNECT"
                    && $0["host"] as? String == String(target.split(separator: ":")[0])
            }
            XCTAssertEqual(record?["target"] as? String, target, "\(record ?? [:])")
            XCTAssertEqual(record?["status"] as? Int, status, "\(record ?? [:])")
        }
    }

    /// Each refusal is logged once, as a CONNECT with its status.
    func testRefusalsAreLogged() throws {
        _ = try connect("denied.test:443")
        let record = airlock.waitForLog(timeout: 5) {
            $0["event"] as? String == "request.access" && $0["method"] as? String == "CONNECT"
        }
        XCTAssertEqual(record?["status"] as? Int, 403)
        XCTAssertEqual(record?["host"] as? String, "denied.test")
    }
}
