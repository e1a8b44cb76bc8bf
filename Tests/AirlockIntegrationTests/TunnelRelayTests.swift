import AirlockTesting
import Foundation
import XCTest

/// Raw CONNECT tunnels end to end: real curl over real TLS through Airlock to a TLS origin
/// (the certificate curl checks is the origin's own), 50 MiB each way with equal SHA-256,
/// bytes sent right behind the CONNECT head, half-close both ways, the idle timeout, an
/// unreachable upstream, and one access record per tunnel with its byte counts.
final class TunnelRelayTests: GatewayTestCase {
    private func server(_ handler: @escaping @Sendable (TCPTestConnection) -> Void) throws -> TCPTestServer {
        let s = try TCPTestServer(handler: handler)
        servers.append(s)
        return s
    }

    /// A gateway whose route `tun` tunnels CONNECTs for 127.0.0.1 and localhost to `ports`.
    private func gateway(ports: [UInt16], limits: [String: String] = [:]) throws -> AirlockProcess {
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML(limits))
            routes:
              - name: tun
                match: { host: "127.0.0.1" }
                connect: tunnel
                connect_ports: [\(ports.map(String.init).joined(separator: ", "))]
                upstream: origin
              - name: tunlocal
                match: { host: localhost }
                connect: tunnel
                connect_ports: [\(ports.map(String.init).joined(separator: ", "))]
                upstream: origin
            """)
        airlocks.append(a)
        return a
    }

    // MARK: real TLS through the tunnel

    func testCurlHTTPSThroughATunnelSeesTheOriginsOwnCertificate() throws {
        let pki = try TLSTestPKI.generate()
        defer { pki.remove() }
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let a = try gateway(ports: [origin.port])
        let r = try Curl.run(["-v", "-x", "http://127.0.0.1:\(a.port)", "--cacert", pki.path("root.pem"),
                              origin.url("/through/the/tunnel")])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "hello over tls /through/the/tunnel", "byte-exact")
        XCTAssertTrue(r.stderr.contains("HTTP/1.1 200 Connection established"), r.stderr)
        let issuer = r.stderr.split(separator: "\n").first { $0.contains("issuer:") }.map(String.init) ?? ""
        XCTAssertTrue(issuer.contains("Airlock Test Intermediate CA"), "the origin's chain, not a minted one: \(issuer)")
        XCTAssertFalse(r.stderr.contains("Via:"), "no Via inside a tunnel")
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["route"] as? String, "tunlocal")
        XCTAssertEqual(record["target"] as? String, "localhost:\(origin.port)")
        XCTAssertEqual(record["tunnel"] as? String, "closed")
        XCTAssertGreaterThan(record["bytes_in"] as? Int ?? 0, 200, "the ClientHello and request went up")
        XCTAssertGreaterThan(record["bytes_out"] as? Int ?? 0, 500, "the certificates and answer came down")
    }

    // MARK: bulk, both ways

    func testFiftyMiBEachWayWithEqualChecksums() throws {
        let echo = try echoServer()
        let a = try gateway(ports: [echo.port])
        let record = try echoEachWay(a, to: echo.port, size: 50 * 1024 * 1024, offset: 7)
        XCTAssertEqual(record["status"] as? Int, 200)
    }

    /// A client that reads slowly: Airlock stops reading the upstream instead of buffering.
    func testSlowReaderKeepsMemoryFlat() throws {
        let big = try server { c in
            let chunk = patternBytes(count: 1024 * 1024)
            for _ in 0..<256 { if (try? c.write(chunk, timeout: 60)) == nil { return } }
        }
        let a = try gateway(ports: [big.port])
        let before = try a.readResidentMemoryKiB()
        let c = try openTunnel(a, to: big.port, receiveBuffer: 64 * 1024)
        defer { c.close() }
        var got = 0
        let deadline = Date().addingTimeInterval(20)
        while got < 8 * 1024 * 1024 && Date() < deadline {
            got += try c.read(upTo: 64 * 1024, timeout: 5).count
            usleep(2_000)
        }
        XCTAssertGreaterThan(got, 1024 * 1024)
        sleep(1)
        let after = try a.readResidentMemoryKiB()
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB for a slow reader")
    }

    // MARK: bytes behind the head, half-close, idle

    func testBytesSentBehindTheConnectHeadReachTheUpstream() throws {
        let echo = try server { c in
            let got = (try? c.read(exactly: 11, timeout: 10)) ?? []
            try? c.write(got.reversed())
        }
        let a = try gateway(ports: [echo.port])
        let c = try openTunnel(a, to: echo.port, first: Array("hello world".utf8))
        defer { c.close() }
        XCTAssertEqual(String(decoding: try c.read(exactly: 11, timeout: 10), as: UTF8.self), "dlrow olleh")
    }

    func testClientHalfCloseStillGetsTheAnswer() throws {
        let server = try server { c in
            let request = (try? c.readToEnd(timeout: 10)) ?? []   // until the client's EOF
            usleep(200_000)
            try? c.write(Array("got \(request.count) bytes".utf8))
        }
        let a = try gateway(ports: [server.port])
        let c = try openTunnel(a, to: server.port)
        defer { c.close() }
        try c.write("question")
        c.shutdownWrite()
        XCTAssertEqual(String(decoding: try c.readToEnd(timeout: 10), as: UTF8.self), "got 8 bytes",
                       "the answer arrives after the client's EOF, then the upstream's EOF")
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["bytes_in"] as? Int, 8)
        XCTAssertEqual(record["bytes_out"] as? Int, 11)
        XCTAssertEqual(record["tunnel"] as? String, "closed")
    }

    func testUpstreamCloseReachesTheClientAsEOF() throws {
        let server = try server { c in try? c.write("bye") }   // then closes
        let a = try gateway(ports: [server.port])
        let c = try openTunnel(a, to: server.port)
        defer { c.close() }
        XCTAssertEqual(String(decoding: try c.readToEnd(timeout: 10), as: UTF8.self), "bye")
        // The client may still send (its direction is open) before it closes too.
        try c.write("late")
        c.shutdownWrite()
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["tunnel"] as? String, "closed")
        XCTAssertEqual(record["bytes_out"] as? Int, 3)
    }

    func testIdleTunnelIsClosed() throws {
        let silent = try server { c in _ = try? c.readToEnd(timeout: 10) }
        let a = try gateway(ports: [silent.port], limits: ["tunnel_idle_timeout": "600ms"])
        let c = try openTunnel(a, to: silent.port)
        defer { c.close() }
        try c.write("x")
        let start = Date()
        XCTAssertEqual(try c.readToEnd(timeout: 10), [], "closed with nothing sent")
        let waited = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(waited, 0.4)
        XCTAssertLessThan(waited, 5)
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["tunnel"] as? String, "idle-timeout")
        XCTAssertEqual(record["bytes_in"] as? Int, 1)
    }

    // MARK: failures before the 200

    func testUnreachableUpstreamIs502BeforeAny200() throws {
        let port = unusedLoopbackPort()
        let a = try gateway(ports: [port])
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: x\r\n\r\n", method: "CONNECT")
        XCTAssertEqual(r.status, 502)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "upstream-refused")
        XCTAssertTrue(c.isClosedByPeer(timeout: 5))
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["status"] as? Int, 502)
        XCTAssertEqual(record["tunnel"] as? String, "connect-failed")
        XCTAssertEqual(a.logRecords().filter { $0["event"] as? String == "request.access" }.count, 1, "logged once")
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" && $0["error"] as? String == "upstream-refused" })
    }

    /// A tunnel refused before its 200 (the target does not resolve): the `request.error` record
    /// names the route and the target, as the access record does.
    func testUnresolvableTargetIs502AndTheErrorRecordNamesTheRoute() throws {
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: nowhere
                match: { host: "*.invalid" }
                connect: tunnel
                upstream: origin
            """)
        airlocks.append(a)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("CONNECT no-such-host.invalid:443 HTTP/1.1\r\nHost: no-such-host.invalid:443\r\n\r\n",
                               method: "CONNECT")
        XCTAssertEqual(r.status, 502, r.bodyString)
        XCTAssertEqual(Fixture.json(r.body)["error"] as? String, "upstream-unresolvable")
        let error = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" })
        XCTAssertEqual(error["error"] as? String, "upstream-unresolvable")
        XCTAssertEqual(error["route"] as? String, "nowhere", "\(error)")
        XCTAssertEqual(error["target"] as? String, "no-such-host.invalid:443", "\(error)")
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["route"] as? String, "nowhere")
        XCTAssertEqual(record["tunnel"] as? String, "connect-failed")
    }

    /// Several tunnels, each logged exactly once with its own counts.
    func testEachTunnelHasOneAccessRecord() throws {
        let echo = try server { c in
            while let chunk = try? c.read(upTo: 65536, timeout: 10), !chunk.isEmpty { try? c.write(chunk) }
            c.shutdownWrite()
        }
        let a = try gateway(ports: [echo.port])
        for n in 1...5 {
            let c = try openTunnel(a, to: echo.port)
            try c.write(Array(repeating: 0x41, count: n * 1000))
            c.shutdownWrite()
            XCTAssertEqual(try c.readToEnd(timeout: 10).count, n * 1000)
            c.close()
        }
        let records = Fixture.accessRecords(a, count: 5) { $0["tunnel"] != nil }
        usleep(300_000)
        XCTAssertEqual(Fixture.accessRecords(a, count: 5) { $0["tunnel"] != nil }.count, 5)
        XCTAssertEqual(Set(records.compactMap { $0["bytes_in"] as? Int }), Set((1...5).map { $0 * 1000 }))
        XCTAssertEqual(records.map { $0["bytes_in"] as? Int }, records.map { $0["bytes_out"] as? Int })
        XCTAssertEqual(Set(records.compactMap { $0["request_id"] as? String }).count, 5)
    }

    /// A client that resets its tunnel after the 200: no answer can be given any more, so the
    /// `tunnel.error` record says what broke, beside the access record's `client-error`.
    func testAResetAfterThe200IsLoggedWithItsReason() throws {
        let echo = try server { c in
            while let chunk = try? c.read(upTo: 65536, timeout: 10), !chunk.isEmpty { try? c.write(chunk) }
            c.shutdownWrite()
        }
        let a = try gateway(ports: [echo.port])
        let script = """
            import socket, struct, time
            s = socket.create_connection(("127.0.0.1", \(a.port)), timeout=10)
            s.sendall(b"CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            head = b""
            while not head.endswith(b"\\r\\n\\r\\n"): head += s.recv(1)
            s.sendall(b"z" * 100)
            got = b""
            while len(got) < 100: got += s.recv(100)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()   # RST
            print("reset")
            """
        let r = try runProcess(TLSFixtureScripts.python(), ["-c", script], timeout: 30)
        XCTAssertEqual(r.stdoutString, "reset\n", r.stderr)
        let error = a.waitForLog(timeout: 5) { $0["event"] as? String == "tunnel.error" }
        XCTAssertEqual(error?["end"] as? String, "client-error", "\(error ?? [:])")
        XCTAssertTrue((error?["reason"] as? String ?? "").hasPrefix("client: "), "\(error ?? [:])")
        XCTAssertEqual(error?["route"] as? String, "tun")
        XCTAssertEqual(error?["bytes_in"] as? Int, 100)
        XCTAssertEqual(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first?["tunnel"] as? String, "client-error")
    }
}
