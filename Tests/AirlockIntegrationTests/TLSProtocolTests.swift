import AirlockTesting
import Foundation
import XCTest

/// The README's TLS origination floor, against `openssl s_server`: TLS 1.2 minimum (a TLS 1.1-only upstream
/// fails the handshake: 502 untrusted-upstream, handshake-failed) and renegotiation refused (a TLS 1.2
/// upstream that asks to renegotiate mid-exchange gets a no_renegotiation alert; its later answer never
/// reaches the client).
final class TLSProtocolTests: XCTestCase {
    private var pki: TLSTestPKI!

    override func setUpWithError() throws {
        try Requirement.tool(OpenSSLServer.executable)
        pki = try TLSTestPKI.generate()
    }

    override func tearDown() {
        pki?.remove()
        pki = nil
    }

    /// s_server with the test leaf (localhost) and its intermediate, plus `protocolArguments`.
    private func server(_ protocolArguments: [String]) throws -> OpenSSLServer {
        try OpenSSLServer(arguments: protocolArguments + ["-cert", pki.path("leaf.pem"), "-key", pki.path("leaf.key"),
                                                         "-cert_chain", pki.path("intermediate.pem")])
    }

    private func gateway(_ server: OpenSSLServer) throws -> AirlockProcess {
        try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML(["upstream_timeout": "20s"]))
            routes:
              - name: tls
                match: { host: "*" }
                upstream: https://localhost:\(server.port)
                security:
                  ca: "\(pki.path("root.pem"))"
            """)
    }

    private func text(_ r: RawResponse) -> String { String(decoding: r.raw, as: UTF8.self) }

    func testTLS11OnlyUpstreamFailsTheHandshake() throws {
        // TLS 1.0/1.1 need security level 0 in OpenSSL 3; the server offers nothing newer.
        let s = try server(["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-www"])
        defer { s.stop() }
        let a = try gateway(s)
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("GET /old HTTP/1.1\r\nHost: app.example.test\r\n\r\n")
        XCTAssertEqual(r.status, 502, "\(text(r))\n\(s.output)")
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "untrusted-upstream", text(r))
        XCTAssertEqual(body["reason"] as? String, "handshake-failed", text(r))
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "upstream.rejected" }
        XCTAssertEqual(record?["reason"] as? String, "handshake-failed", "\(record ?? [:])")
    }

    func testUpstreamRenegotiationIsRefused() throws {
        let s = try server(["-tls1_2"])
        defer { s.stop() }
        let a = try gateway(s)
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /reneg HTTP/1.1\r\nHost: app.example.test\r\n\r\n")
        XCTAssertTrue(s.waitForOutput("GET /reneg HTTP/1.1", timeout: 15), "the request never reached s_server:\n\(s.output)")
        // s_server: a line "r" sends HelloRequest (renegotiate) on the open connection.
        try s.send("r\n")
        XCTAssertTrue(s.waitForOutput("no renegotiation", timeout: 10),
                      "Airlock did not refuse the renegotiation with a no_renegotiation alert:\n\(s.output)")
        // Whatever the server writes now must not reach the client as the answer.
        try? s.send("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nrenegotiated")
        let r = try c.readResponse(timeout: 15)
        XCTAssertEqual(r.status, 502, "\(text(r))\n\(s.output)")
        XCTAssertNotNil(Fixture.json(r.body)["error"] as? String, text(r))
        XCTAssertFalse(text(r).contains("renegotiated"), text(r))
    }
}
