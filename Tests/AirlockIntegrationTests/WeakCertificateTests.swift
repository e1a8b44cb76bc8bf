import AirlockTesting
import Foundation
import XCTest

/// Issue 11 item 1: upstream chains below OpenSSL security level 2 (a SHA-1 or MD5 signature under the anchor,
/// an RSA-1024 leaf or intermediate) are refused with 502 untrusted-upstream, reason weak-certificate, on every
/// verification path, as curl refuses them; a route may lower the level only together with pinning.
/// The weak certificates are made at test time (`TLSTestPKI.generate(weak: true)`); the origins serving them run
/// at their own security level 0 so that they can.
final class WeakCertificateTests: XCTestCase {
    private var pki: TLSTestPKI!
    private var origins: [String: TLSTestOrigin] = [:]
    private var airlocks: [AirlockProcess] = []

    /// Each weak chain with OpenSSL's verify error for it.
    private static let weak: [(name: String, verifyError: String)] = [
        ("sha1-leaf", "CA signature digest algorithm too weak"),
        ("md5-leaf", "CA signature digest algorithm too weak"),
        ("sha1-ca-leaf", "CA signature digest algorithm too weak"),
        ("rsa1024-leaf", "EE certificate key too weak"),
        ("rsa1024-ca-leaf", "CA certificate key too weak"),
    ]
    /// Good chains from the same PKI: EC under `intermediate`, RSA-2048 under `rsa-intermediate` (the issuer of the
    /// SHA-1 and MD5 leaves).
    private static let good = ["leaf", "rsa-leaf"]

    override func setUpWithError() throws {
        pki = try TLSTestPKI.generate(weak: true)
    }

    override func tearDown() {
        for a in airlocks { a.stop() }
        for o in origins.values { o.stop() }
        airlocks = []
        origins = [:]
        pki?.remove()
        pki = nil
    }

    // MARK: helpers

    /// The origin serving chain `name` (started the first time it is asked for).
    private func origin(_ name: String) throws -> TLSTestOrigin {
        if let o = origins[name] { return o }
        let o = try TLSTestOrigin(pki: pki, chain: "\(name)-chain.pem", key: "\(name).key", securityLevel: 0)
        origins[name] = o
        return o
    }

    /// One gateway with a route per named origin: host `<name>.test` goes to `https://localhost:<its port>` with the
    /// `security:` lines `security(name)` gives.
    private func gateway(_ names: [String], security: (String) -> [String]) throws -> AirlockProcess {
        var yaml = """
        listen: 127.0.0.1:0
        workers: 1
        \(Fixture.limitsYAML([:]))
        routes:
        """
        for name in names {
            let port = try origin(name).port
            yaml += """

              - name: \(name)
                match: { host: "\(name).test" }
                upstream: https://localhost:\(port)
                security:
            """
            for line in security(name) { yaml += "\n      " + line }
        }
        let a = try Fixture.start(yaml)
        airlocks.append(a)
        return a
    }

    private func get(_ a: AirlockProcess, _ name: String, _ path: String) throws -> RawResponse {
        let c = try RawClient(port: a.port)
        defer { c.close() }
        return try c.exchange("GET \(path) HTTP/1.1\r\nHost: \(name).test\r\n\r\n")
    }

    private func text(_ r: RawResponse) -> String { String(decoding: r.body, as: UTF8.self) }

    private func assertServed(_ a: AirlockProcess, _ name: String, _ path: String, _ what: String,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try get(a, name, path)
        let o = try origin(name)
        XCTAssertEqual(r.status, 200, "\(what), \(name): \(text(r))\n\(a.logLines.suffix(5).joined(separator: "\n"))",
                       file: file, line: line)
        XCTAssertEqual(text(r), "hello over tls \(path)", "\(what), \(name)", file: file, line: line)
        XCTAssertTrue(o.requestLines.contains("GET \(path) HTTP/1.1"), "\(what), \(name): \(o.logText)", file: file, line: line)
    }

    /// 502 untrusted-upstream with `reason`, an `upstream.rejected` record for the route carrying `verifyError`,
    /// and no request reached the origin.
    private func assertRefused(_ a: AirlockProcess, _ name: String, _ path: String, reason: String = "weak-certificate",
                               verifyError: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try get(a, name, path)
        let o = try origin(name)
        XCTAssertEqual(r.status, 502, "\(what), \(name): \(text(r))", file: file, line: line)
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "untrusted-upstream", "\(what), \(name): \(text(r))", file: file, line: line)
        XCTAssertEqual(body["reason"] as? String, reason, "\(what), \(name): \(text(r))", file: file, line: line)
        let record = a.waitForLog(timeout: 5) {
            $0["event"] as? String == "upstream.rejected" && $0["route"] as? String == name
        }
        XCTAssertEqual(record?["reason"] as? String, reason, "\(what), \(name): \(record ?? [:])", file: file, line: line)
        XCTAssertEqual(record?["verify_error"] as? String, verifyError, "\(what), \(name): \(record ?? [:])",
                       file: file, line: line)
        XCTAssertEqual((record?["presented_pins"] as? [String])?.first, pki.pin(name), "\(what), \(name)", file: file, line: line)
        XCTAssertTrue(o.receivesNoRequest(), "\(what), \(name): a refused upstream got a request:\n\(o.logText)",
                      file: file, line: line)
        XCTAssertTrue(o.requestLines.isEmpty, "\(what), \(name): a refused upstream got a request:\n\(o.logText)",
                      file: file, line: line)
    }

    private func ca() -> String { "ca: \"\(pki.path("root.pem"))\"" }
    private func pin(_ name: String) -> String { "pins: [\"\(pki.pin(name))\"]" }

    // MARK: the fixture is weak the way a user's client sees it

    func testCurlRefusesEachWeakChainAndAcceptsTheGoodOnes() throws {
        for (name, _) in Self.weak {
            let o = try origin(name)
            let r = try Curl.run(["--cacert", pki.path("root.pem"), "-o", "/dev/null", o.url("/curl")])
            XCTAssertEqual(r.exitCode, 60, "curl --cacert root must refuse \(name) (peer certificate): \(r.stderr)")
        }
        for name in Self.good {
            let o = try origin(name)
            let r = try Curl.run(["--cacert", pki.path("root.pem"), o.url("/curl")])
            XCTAssertEqual(r.exitCode, 0, "\(name): \(r.stderr)")
            XCTAssertEqual(r.stdoutString, "hello over tls /curl", name)
        }
    }

    // MARK: default trust

    func testWeakChainsAreRefusedUnderDefaultTrustAndGoodChainsServed() throws {
        let a = try gateway(Self.weak.map(\.name) + Self.good) { _ in [self.ca()] }
        for (name, verifyError) in Self.weak {
            try assertRefused(a, name, "/default-trust", verifyError: verifyError, "ca: root, no pinning")
        }
        for name in Self.good {
            try assertServed(a, name, "/default-trust", "ca: root, no pinning")
        }
    }

    // MARK: pinning does not excuse a weak chain

    func testMatchingPublicKeyPinDoesNotExcuseAWeakChain() throws {
        let a = try gateway(Self.weak.map(\.name) + Self.good) { name in
            [self.ca(), "pinning: public-key", self.pin(name)]
        }
        for (name, verifyError) in Self.weak {
            try assertRefused(a, name, "/pinned", verifyError: verifyError, "public-key pin on the weak leaf itself")
        }
        for name in Self.good {
            try assertServed(a, name, "/pinned", "public-key pin on the leaf")
        }
    }

    /// `allow_invalid_certificates` leaves only the verification against the pinned certificates (the root here, as
    /// the only anchor): the level applies there too.
    func testPinnedAnchorVerificationChecksTheLevelToo() throws {
        let a = try gateway(Self.weak.map(\.name) + Self.good) { _ in
            ["pinning: certificate", "certificates: [\"\(self.pki.path("root.pem"))\"]", "allow_invalid_certificates: true"]
        }
        for (name, verifyError) in Self.weak {
            try assertRefused(a, name, "/anchor", verifyError: verifyError, "pinned root as the only anchor")
        }
        for name in Self.good {
            try assertServed(a, name, "/anchor", "pinned root as the only anchor")
        }
    }

    func testPinnedWeakLeafAsItsOwnAnchorIsStillCheckedForKeySize() throws {
        let a = try gateway(["rsa1024-leaf"]) { name in
            ["pinning: certificate", "certificates: [\"\(self.pki.path("\(name).pem"))\"]", "allow_invalid_certificates: true"]
        }
        try assertRefused(a, "rsa1024-leaf", "/leaf-anchor", verifyError: "EE certificate key too weak",
                          "the RSA-1024 leaf pinned as the only anchor")
    }

    /// Public-key pinning with `allow_invalid_certificates` verifies no chain (no `ca:` here, so none would
    /// validate), yet the pinned chain's keys and signature digests must still reach the level.
    func testPublicKeyPinWithoutValidationDoesNotExcuseAWeakChain() throws {
        let a = try gateway(Self.weak.map(\.name) + Self.good + ["selfsigned"]) { name in
            ["pinning: public-key", self.pin(name), "allow_invalid_certificates: true"]
        }
        for (name, verifyError) in Self.weak {
            try assertRefused(a, name, "/unvalidated", verifyError: verifyError, "allow_invalid_certificates with its pin")
        }
        for name in Self.good + ["selfsigned"] {
            try assertServed(a, name, "/unvalidated", "allow_invalid_certificates with its pin")
        }
        // A self-signed legacy certificate's own SHA-1 signature proves nothing (as for any anchor): served.
        let selfSigned = try gateway(["sha1-selfsigned"]) { name in
            ["pinning: public-key", self.pin(name), "allow_invalid_certificates: true"]
        }
        try assertServed(selfSigned, "sha1-selfsigned", "/unvalidated-selfsigned", "SHA-1 self-signed, pinned")
        let legacy = try gateway(Self.weak.map(\.name)) { name in
            ["pinning: public-key", self.pin(name), "allow_invalid_certificates: true", "min_security_level: 0"]
        }
        for (name, _) in Self.weak {
            try assertServed(legacy, name, "/unvalidated-legacy", "allow_invalid_certificates, pin, level 0")
        }
    }

    // MARK: a route that lowers the level (only with pinning)

    func testLevelZeroWithAMatchingPinAcceptsEachWeakChain() throws {
        let a = try gateway(Self.weak.map(\.name)) { name in
            [self.ca(), "pinning: public-key", self.pin(name), "min_security_level: 0"]
        }
        for (name, _) in Self.weak {
            try assertServed(a, name, "/legacy", "min_security_level: 0 with its pin")
        }
    }

    func testLevelZeroStillRequiresTheMatchingPin() throws {
        let a = try gateway(["sha1-leaf"]) { _ in
            [self.ca(), "pinning: public-key", self.pin("leaf"), "min_security_level: 0"]
        }
        let r = try get(a, "sha1-leaf", "/wrong-pin")
        XCTAssertEqual(r.status, 502, text(r))
        XCTAssertEqual(Fixture.json(r.body)["reason"] as? String, "pin-mismatch", text(r))
    }

    /// Level 1 is 80 bits: an RSA-1024 key (80) passes, a SHA-1 signature (63 in OpenSSL 3) does not.
    func testLevelOneAcceptsRSA1024ButNotSHA1() throws {
        let a = try gateway(["rsa1024-leaf", "sha1-leaf"]) { name in
            [self.ca(), "pinning: public-key", self.pin(name), "min_security_level: 1"]
        }
        try assertServed(a, "rsa1024-leaf", "/level-1", "min_security_level: 1")
        try assertRefused(a, "sha1-leaf", "/level-1", verifyError: "CA signature digest algorithm too weak",
                          "min_security_level: 1")
    }

    /// The route's level reaches the handshake too: a legacy host whose only key exchange is DHE over a 1536-bit
    /// group (good RSA-2048 chain) fails the handshake at the default level 2 and is served at level 1 with its pin.
    func testTheRouteLevelAppliesToTheHandshake() throws {
        let o = try TLSTestOrigin(pki: pki, chain: "rsa-leaf-chain.pem", key: "rsa-leaf.key", securityLevel: 0,
                                  dheOnly: "dh1536.pem")
        origins["dhe"] = o
        let strict = try gateway(["dhe"]) { _ in [self.ca(), "pinning: public-key", self.pin("rsa-leaf")] }
        let r = try get(strict, "dhe", "/dhe")
        XCTAssertEqual(r.status, 502, text(r))
        XCTAssertEqual(Fixture.json(r.body)["reason"] as? String, "handshake-failed", text(r))
        XCTAssertTrue(o.requestLines.isEmpty, o.logText)
        let legacy = try gateway(["dhe"]) { _ in
            [self.ca(), "pinning: public-key", self.pin("rsa-leaf"), "min_security_level: 1"]
        }
        try assertServed(legacy, "dhe", "/dhe-legacy", "min_security_level: 1, DHE-1536 only")
        XCTAssertEqual(o.versions.last, "TLSv1.2", o.logText)
    }

    // MARK: airlock pin

    func testPinCommandReportsAWeakChainAsWeak() throws {
        for (name, verifyError) in Self.weak {
            let o = try origin(name)
            let r = try runProcess(AirlockProcess.builtExecutable(), ["pin", "localhost:\(o.port)", "--ca", pki.path("root.pem")])
            XCTAssertEqual(r.exitCode, 0, r.stderr)
            XCTAssertTrue(r.stdoutString.contains("verification: \(verifyError) (weak-certificate)"), "\(name): \(r.stdoutString)")
            XCTAssertTrue(r.stdoutString.contains(pki.pin(name)), "\(name): the chain is still listed: \(r.stdoutString)")
        }
        let o = try origin("rsa-leaf")
        let r = try runProcess(AirlockProcess.builtExecutable(), ["pin", "localhost:\(o.port)", "--ca", pki.path("root.pem")])
        XCTAssertTrue(r.stdoutString.contains("verification: ok"), r.stdoutString)
    }
}
