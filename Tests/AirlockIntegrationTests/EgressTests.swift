import AirlockTesting
import Foundation
import XCTest

/// Egress policy end to end (issue #18): which addresses a route may dial, checked on the
/// resolved address before anything is dialled. Every denied target here is refused before a
/// connect, so no packet leaves loopback; the loopback cases have a real origin behind them, so
/// a check that let them through would show as a request at the origin.
final class EgressTests: XCTestCase {
    private var origin: TestOrigin!
    private var airlock: AirlockProcess?
    private var scratch = ""

    override func setUpWithError() throws {
        origin = try TestOrigin(.respond { _ in .ok("origin") })
        scratch = NSTemporaryDirectory() + "airlock-egress-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// A forward proxy on a shared (non-loopback) listener: an `origin` route for every host,
    /// tunnels allowed to the origin's port and 443.
    private func sharedListenerConfig(egress: String = "") -> String {
        """
        listen: 0.0.0.0:0
        workers: 1
        allow_open_proxy: true
        admin: off
        \(Fixture.limitsYAML([:]))
        routes:
          - name: open
            match: { host: "*" }
            upstream: origin
            connect: tunnel
            connect_ports: [443, \(origin.port)]
        \(egress)
        """
    }

    private func get(_ url: String, via port: UInt16) throws -> (RawResponse, [String: Any]) {
        let c = try RawClient(port: port)
        defer { c.close() }
        let r = try c.exchange("GET \(url) HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        return (r, Fixture.json(r.body))
    }

    private func connect(_ target: String, via port: UInt16) throws -> (RawResponse, [String: Any]) {
        let c = try RawClient(port: port)
        defer { c.close() }
        let r = try c.exchange("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n", method: "CONNECT")
        return (r, Fixture.json(r.body))
    }

    /// The `egress.denied` record for request `id`, waited for (bounded).
    private func deniedRecord(_ a: AirlockProcess, id: String?) throws -> [String: Any] {
        let id = try XCTUnwrap(id, "the error body carries request_id")
        return try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "egress.denied" && $0["request_id"] as? String == id
        }, "an egress.denied record for \(id)")
    }

    /// 403 egress-denied, and its record with the resolved address and the reason. `name`: the
    /// target was a name, so the body must not give away what it resolved to.
    private func assertDenied(_ r: RawResponse, _ body: [String: Any], _ a: AirlockProcess, address: String,
                              reason: String, name: Bool = false, _ what: String,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(r.status, 403, what, file: file, line: line)
        XCTAssertEqual(body["error"] as? String, "egress-denied", what, file: file, line: line)
        if name {
            let text = String(decoding: r.body, as: UTF8.self)
            XCTAssertFalse(text.contains(address), "the body never names the resolved address: \(text)", file: file, line: line)
        }
        let record = try deniedRecord(a, id: body["request_id"] as? String)
        XCTAssertEqual(record["route"] as? String, "open", what, file: file, line: line)
        XCTAssertEqual(record["addresses"] as? [String], [address], what, file: file, line: line)
        XCTAssertEqual(record["reasons"] as? [String], [reason], what, file: file, line: line)
    }

    // MARK: a shared listener's default

    func testASharedListenerDeniesEveryInternalClassOverIPv4AndIPv6() throws {
        let a = try Fixture.start(sharedListenerConfig())
        airlock = a
        let p = origin.port
        let cases: [(host: String, address: String, reason: String)] = [
            ("127.0.0.1", "127.0.0.1", "loopback"), ("127.0.0.2", "127.0.0.2", "loopback"),
            ("[::1]", "::1", "loopback"), ("[::ffff:127.0.0.1]", "127.0.0.1", "loopback"),
            ("10.20.30.40", "10.20.30.40", "private"), ("172.16.0.1", "172.16.0.1", "private"),
            ("192.168.1.1", "192.168.1.1", "private"), ("[::ffff:192.168.1.1]", "192.168.1.1", "private"),
            ("100.64.0.1", "100.64.0.1", "shared-address-space"),
            ("169.254.169.254", "169.254.169.254", "link-local"), ("[fe80::1]", "fe80::1", "link-local"),
            ("[fd00:ec2::254]", "fd00:ec2::254", "unique-local"), ("[fc00::1]", "fc00::1", "unique-local"),
            ("224.0.0.1", "224.0.0.1", "multicast"), ("[ff02::1]", "ff02::1", "multicast"),
            ("0.0.0.0", "0.0.0.0", "unspecified"), ("[::]", "::", "unspecified"),
        ]
        for c in cases {
            let (r, body) = try get("http://\(c.host):\(p)/x", via: a.port)
            try assertDenied(r, body, a, address: c.address, reason: c.reason, "GET \(c.host)")
            let (t, tbody) = try connect("\(c.host):\(p)", via: a.port)
            try assertDenied(t, tbody, a, address: c.address, reason: c.reason, "CONNECT \(c.host)")
        }
        // The origin behind the loopback cases saw nothing: wait a bounded time for a request that must not come.
        XCTAssertFalse(origin.waitForConnections(1, timeout: 1), "no connection reached the origin")
        XCTAssertEqual(origin.acceptedConnections, 0)
        // Counted per refused request, by reason.
        let metrics = a.logRecords().filter { $0["event"] as? String == "egress.denied" }
        XCTAssertEqual(metrics.count, cases.count * 2, "one record per refused request")
    }

    /// A name is checked by what it resolves to, not by how it reads: names mapped to internal
    /// addresses through /etc/hosts (in a private mount namespace for Airlock alone).
    func testANameThatResolvesToADeniedAddressIsDenied() throws {
        let a = try startWithHosts("""
            127.0.0.1 loop.egress.test
            ::1 loop6.egress.test
            10.9.9.9 mixed.egress.test
            127.0.0.1 mixed.egress.test
            169.254.169.254 metadata.egress.test
            """, config: sharedListenerConfig(egress: """
                egress:
                  allow: [127.0.0.1/32]
            """.replacingOccurrences(of: "\n", with: "\n    ")))
        let p = origin.port
        let (m, mbody) = try get("http://metadata.egress.test:\(p)/", via: a.port)
        try assertDenied(m, mbody, a, address: "169.254.169.254", reason: "link-local", name: true, "metadata name")
        let (l6, l6body) = try get("http://loop6.egress.test:\(p)/", via: a.port)
        try assertDenied(l6, l6body, a, address: "::1", reason: "loopback", name: true, "::1 name (the allow names 127.0.0.1 only)")
        XCTAssertFalse(origin.waitForConnections(1, timeout: 1), "nothing reached the origin yet")

        // Allowed by the route's list: the origin answers.
        let (ok, _) = try get("http://loop.egress.test:\(p)/", via: a.port)
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(String(decoding: ok.body, as: UTF8.self), "origin")
        // A name with a denied and an allowed address: only the allowed one is dialled, and the
        // denied one is on record.
        let (mixed, _) = try get("http://mixed.egress.test:\(p)/", via: a.port)
        XCTAssertEqual(mixed.status, 200)
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "egress.denied" && $0["host"] as? String == "mixed.egress.test"
        })
        XCTAssertEqual(record["addresses"] as? [String], ["10.9.9.9"])
        XCTAssertEqual(record["refused"] as? Bool, false)
        XCTAssertTrue(origin.waitForRequests(2, timeout: 5))
        XCTAssertEqual(origin.requests.count, 2)
    }

    private func startWithHosts(_ hosts: String, config: String) throws -> AirlockProcess {
        try Requirement.check(getuid() == 0, "root, for a private mount namespace (unshare --mount)")
        try Requirement.tool("/usr/bin/unshare")
        let hostsFile = scratch + "/hosts"
        try Data((hosts + "\n").utf8).write(to: URL(fileURLWithPath: hostsFile))
        let wrapper = scratch + "/airlock-with-hosts"
        let script = """
            #!/bin/sh
            exec /usr/bin/unshare --mount --propagation private /bin/sh -c \
              'mount --bind "$0" /etc/hosts && exec "$@"' '\(hostsFile)' '\(AirlockProcess.builtExecutable())' "$@"

            """
        try Data(script.utf8).write(to: URL(fileURLWithPath: wrapper))
        XCTAssertEqual(chmod(wrapper, 0o755), 0)
        let a = try AirlockProcess(executable: wrapper, configYAML: config)
        airlock = a
        return a
    }

    // MARK: route lists

    func testAllowOpensAClassAndDenyClosesOneEvenOnALoopbackListener() throws {
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: off
            \(Fixture.limitsYAML([:]))
            routes:
              - name: open
                match: { host: "*" }
                upstream: origin
                connect: tunnel
                connect_ports: [\(origin.port)]
                egress:
                  deny: [127.0.0.0/8, "::1"]
                  allow: [127.0.0.9/32]
            """)
        airlock = a
        let (r, body) = try get("http://127.0.0.1:\(origin.port)/", via: a.port)
        try assertDenied(r, body, a, address: "127.0.0.1", reason: "deny-list", "deny list on a loopback listener")
        let (t, tbody) = try connect("127.0.0.1:\(origin.port)", via: a.port)
        try assertDenied(t, tbody, a, address: "127.0.0.1", reason: "deny-list", "CONNECT, deny list")
        XCTAssertFalse(origin.waitForConnections(1, timeout: 1), "nothing reached the origin")
        // 127.0.0.9 is allowed by the longer prefix; nobody listens there, so the answer is
        // the connect's (502), not the policy's.
        let (nine, nbody) = try get("http://127.0.0.9:\(origin.port)/", via: a.port)
        XCTAssertEqual(nine.status, 502, "\(nbody)")
        XCTAssertEqual(nbody["error"] as? String, "upstream-refused")
    }

    /// Pooled connections are keyed by host and port, not by route: one opened for a route that
    /// allows loopback is not handed to a route that does not.
    func testAPooledConnectionIsNotReusedAcrossAWiderPolicy() throws {
        let a = try Fixture.start(sharedListenerConfig(egress: "").replacingOccurrences(of: """
              - name: open
            """, with: """
              - name: wide
                match: { host: "*", path_prefix: /wide }
                upstream: origin
                egress: { allow: [127.0.0.1/32] }
              - name: open
            """))
        airlock = a
        let url = "http://127.0.0.1:\(origin.port)"
        let (wide, _) = try get(url + "/wide", via: a.port)
        XCTAssertEqual(wide.status, 200, "the wide route reaches loopback")
        XCTAssertTrue(origin.waitForRequests(1, timeout: 5))
        let (narrow, body) = try get(url + "/narrow", via: a.port)
        try assertDenied(narrow, body, a, address: "127.0.0.1", reason: "loopback", "the idle pooled connection")
        XCTAssertFalse(origin.waitForRequests(2, timeout: 1), "the narrow route's request never reached the origin")
        XCTAssertEqual(origin.requests.map(\.target), ["/wide"])
    }

    /// A loopback listener keeps today's default: an origin route reaches loopback.
    func testALoopbackListenerStillReachesLoopbackByDefault() throws {
        let a = try Fixture.start(Fixture.forwardConfig())
        airlock = a
        let (r, _) = try get("http://127.0.0.1:\(origin.port)/", via: a.port)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "origin")
        // The unspecified address is never dialled, whatever the listener (it reaches this
        // machine's own listeners on Linux).
        let (u, ubody) = try get("http://0.0.0.0:\(origin.port)/", via: a.port)
        XCTAssertEqual(u.status, 403)
        XCTAssertEqual(ubody["error"] as? String, "egress-denied")
        XCTAssertTrue(origin.waitForRequests(1, timeout: 5))
        XCTAssertFalse(origin.waitForRequests(2, timeout: 1), "0.0.0.0 did not reach the origin")
    }

    // MARK: our own listeners

    /// The admin listener joins the loop check: absolute-form, a gateway route's fixed
    /// upstream and CONNECT all get 508, by resolved address and port.
    func testTheAdminListenerIsNeverAnUpstream() throws {
        let adminPort = unusedLoopbackPort()
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:\(adminPort)
            \(Fixture.limitsYAML([:]))
            routes:
              - name: admin-by-gateway
                match: { host: gateway.test }
                upstream: http://127.0.0.1:\(adminPort)
              - name: open
                match: { host: "*" }
                upstream: origin
                connect: tunnel
                connect_ports: [\(adminPort)]
            """)
        airlock = a
        for url in ["http://127.0.0.1:\(adminPort)/tasks", "http://localhost:\(adminPort)/tasks",
                    "http://127.0.0.1:\(adminPort)/rejects"] {
            let (r, body) = try get(url, via: a.port)
            XCTAssertEqual(r.status, 508, url)
            XCTAssertEqual(body["error"] as? String, "loop-detected", url)
            XCTAssertEqual(r.reason.isEmpty, false)
        }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let g = try c.exchange("GET /tasks HTTP/1.1\r\nHost: gateway.test\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(g.status, 508, "a gateway route whose upstream is the admin listener")
        XCTAssertEqual(Fixture.json(g.body)["error"] as? String, "loop-detected")
        let (t, tbody) = try connect("127.0.0.1:\(adminPort)", via: a.port)
        XCTAssertEqual(t.status, 508)
        XCTAssertEqual(tbody["error"] as? String, "loop-detected")
        // The admin listener itself still answers its own clients.
        let admin = try RawClient(port: adminPort)
        defer { admin.close() }
        XCTAssertEqual(try admin.exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status, 200)
    }
}
