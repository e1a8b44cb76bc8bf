import AirlockTesting
import Foundation
import Synchronization
import XCTest

/// TLS origination with AFSecurityPolicy-style pinning (issue 3), end to end: a plain-HTTP client, Airlock, and a
/// real TLS origin on loopback (`TLSTestOrigin`) serving certificates from a PKI generated at test time.
final class TLSOriginationTests: XCTestCase {
    private var pki: TLSTestPKI!
    private var origins: [TLSTestOrigin] = []
    private var airlocks: [AirlockProcess] = []

    override func setUpWithError() throws {
        pki = try TLSTestPKI.generate(notYetValid: true)
    }

    override func tearDown() {
        for a in airlocks { a.stop() }
        for o in origins { o.stop() }
        airlocks = []
        origins = []
        pki?.remove()
        pki = nil
    }

    // MARK: helpers

    private func origin(_ name: String = "leaf", mode: TLSTestOrigin.Mode = .normal) throws -> TLSTestOrigin {
        let o = try TLSTestOrigin(pki: pki, chain: "\(name)-chain.pem", key: "\(name).key", mode: mode)
        origins.append(o)
        return o
    }

    /// `security:` lines for a route: `ca:` the test root unless `ca` is nil, then `lines` as written.
    private func security(ca: String? = "root.pem", _ lines: [String] = []) -> [String] {
        (ca.map { ["ca: \"\(pki.path($0))\""] } ?? []) + lines
    }

    /// `pins: [...]` with the public-key pins of the named test certificates.
    private func pins(_ names: [String]) -> String {
        "pins: [" + names.map { "\"\(pki.pin($0))\"" }.joined(separator: ", ") + "]"
    }

    private func pins(_ names: String...) -> String { pins(names) }

    /// A one-worker gateway whose route `tls` forwards everything to `https://localhost:<origin>`.
    private func gatewayYAML(_ origin: TLSTestOrigin, security: [String], limits: [String: String] = [:]) -> String {
        let block = security.isEmpty ? "" : "\n    security:\n" + security.map { "      " + $0 }.joined(separator: "\n")
        return """
        listen: 127.0.0.1:0
        workers: 1
        \(Fixture.limitsYAML(limits))
        routes:
          - name: tls
            match: { host: "*" }
            upstream: https://localhost:\(origin.port)\(block)
        """
    }

    private func gateway(_ origin: TLSTestOrigin, security: [String],
                         limits: [String: String] = [:]) throws -> AirlockProcess {
        let a = try Fixture.start(gatewayYAML(origin, security: security, limits: limits))
        airlocks.append(a)
        return a
    }

    /// One GET through Airlock on a fresh connection.
    private func get(_ a: AirlockProcess, _ path: String) throws -> RawResponse {
        let c = try RawClient(port: a.port)
        defer { c.close() }
        return try c.exchange("GET \(path) HTTP/1.1\r\nHost: app.example.test\r\n\r\n")
    }

    private func text(_ r: RawResponse) -> String { String(decoding: r.body, as: UTF8.self) }

    private func assertServed(_ r: RawResponse, _ path: String, by o: TLSTestOrigin, _ what: String,
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 200, "\(what): \(text(r))\n\(o.logText)", file: file, line: line)
        XCTAssertEqual(text(r), "hello over tls \(path)", what, file: file, line: line)
        XCTAssertTrue(o.requestLines.contains("GET \(path) HTTP/1.1"), "\(what): \(o.logText)", file: file, line: line)
    }

    /// The client got 502 untrusted-upstream for `reason`, the log has the reject record (returned), and the
    /// origin never received a request line.
    @discardableResult
    private func assertRejected(_ r: RawResponse, by a: AirlockProcess, origin o: TLSTestOrigin, reason: String,
                                _ what: String, file: StaticString = #filePath,
                                line: UInt = #line) -> [String: Any]? {
        XCTAssertEqual(r.status, 502, "\(what): \(text(r))", file: file, line: line)
        XCTAssertEqual(r.header("Content-Type"), "application/json", what, file: file, line: line)
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "untrusted-upstream", "\(what): \(text(r))", file: file, line: line)
        XCTAssertEqual(body["reason"] as? String, reason, "\(what): \(text(r))", file: file, line: line)
        XCTAssertEqual(body["code"] as? Int, -1202, what, file: file, line: line)
        XCTAssertTrue((body["message"] as? String ?? "").contains("pretending to be \u{201C}localhost\u{201D}"),
                      "\(what): \(text(r))", file: file, line: line)
        XCTAssertNotNil(body["request_id"], what, file: file, line: line)
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "upstream.rejected" }
        XCTAssertNotNil(record, "\(what): no upstream.rejected record in\n\(a.logLines.joined(separator: "\n"))",
                        file: file, line: line)
        if let record {
            XCTAssertEqual(record["route"] as? String, "tls", what, file: file, line: line)
            XCTAssertEqual(record["host"] as? String, "localhost", what, file: file, line: line)
            XCTAssertEqual(record["reason"] as? String, reason, what, file: file, line: line)
            XCTAssertEqual("\(record["request_id"] ?? "-")", "\(body["request_id"] ?? "+")", what, file: file, line: line)
        }
        XCTAssertTrue(o.receivesNoRequest(), "\(what): a rejected upstream got a request:\n\(o.logText)",
                      file: file, line: line)
        XCTAssertTrue(o.requestLines.isEmpty, what, file: file, line: line)
        return record
    }

    private func presentedPins(_ record: [String: Any]?) -> [String]? {
        record?["presented_pins"] as? [String]
    }

    // MARK: default trust, no pinning

    func testValidChainUnderTheRouteCAIsTrustedWithoutPinning() throws {
        let o = try origin()
        let a = try gateway(o, security: security())
        let r = try get(a, "/valid")
        assertServed(r, "/valid", by: o, "ca: root, no pinning")
        XCTAssertEqual(o.serverNames, ["localhost"], "SNI is the upstream host")
        XCTAssertNil(a.logRecords().first { $0["event"] as? String == "upstream.rejected" })
    }

    func testWithoutTheRouteCATheChainIsUntrusted() throws {
        let o = try origin()
        let a = try gateway(o, security: [])
        let r = try get(a, "/no-ca")
        let record = assertRejected(r, by: a, origin: o, reason: "untrusted-chain", "system trust only")
        XCTAssertNotNil(record?["verify_error"] as? String, "\(record ?? [:])")
        XCTAssertEqual(presentedPins(record), [pki.pin("leaf"), pki.pin("intermediate")])
    }

    /// A pinned server with a private CA and no `security.ca`: the answer says how to fix it;
    /// an unpinned route's (the system-trust case above) does not talk about pins.
    func testAPinnedPrivateChainWithoutTheRouteCASaysSecurityCAIsTheFix() throws {
        let o = try origin()
        let a = try gateway(o, security: security(ca: nil, ["pinning: public-key", pins("leaf")]))
        let r = try get(a, "/pinned-no-ca")
        _ = assertRejected(r, by: a, origin: o, reason: "untrusted-chain", "pinned, no ca")
        let message = Fixture.json(r.body)["message"] as? String ?? ""
        XCTAssertTrue(message.contains("needs that CA as the route's security.ca"), message)
        XCTAssertTrue(message.contains("allow_invalid_certificates: true with the pins"), message)
        let unpinned = try gateway(o, security: [])
        let plain = Fixture.json(try get(unpinned, "/no-pins").body)["message"] as? String ?? ""
        XCTAssertFalse(plain.contains("security.ca"), plain)
    }

    // MARK: public-key pinning

    func testPublicKeyPinOnAnyCertificateOfTheChainOrInABackupSet() throws {
        let o = try origin()
        let cases: [(String, [String])] = [
            ("leaf", ["leaf"]),
            ("intermediate", ["intermediate"]),
            ("root, which the server does not send", ["root"]),
            ("one right pin and one unrelated", ["other-root", "intermediate"]),
        ]
        for (index, (what, names)) in cases.enumerated() {
            let a = try gateway(o, security: security(["pinning: public-key", pins(names)]))
            let path = "/pin-\(index)"
            assertServed(try get(a, path), path, by: o, "pin on \(what)")
            a.stop()
        }
    }

    func testPinOfTheOtherChainIsAPinMismatchListingThePresentedPins() throws {
        let o = try origin()
        let a = try gateway(o, security: security(["pinning: public-key", pins("other-root", "other-leaf")]))
        let record = assertRejected(try get(a, "/other"), by: a, origin: o, reason: "pin-mismatch", "other chain's pins")
        XCTAssertEqual(presentedPins(record), [pki.pin("leaf"), pki.pin("intermediate")],
                       "what the upstream presented, so an operator sees what changed")
        XCTAssertEqual(record?["pinning"] as? String, "public-key")
        XCTAssertNil(record?["verify_error"], "the chain itself validated: \(record ?? [:])")
    }

    func testPinScopeLeafWithOnlyTheRootPinnedIsAPinMismatch() throws {
        let o = try origin()
        let a = try gateway(o, security: security(["pinning: public-key", pins("root"), "pin_scope: leaf"]))
        let record = assertRejected(try get(a, "/scope"), by: a, origin: o, reason: "pin-mismatch", "leaf scope")
        XCTAssertEqual(presentedPins(record), [pki.pin("leaf"), pki.pin("intermediate")])
    }

    // MARK: hostname

    func testRightPinButWrongHostnameIsAHostnameMismatch() throws {
        let o = try origin("wrongname")
        let a = try gateway(o, security: security(["pinning: public-key", pins("root")]))
        let record = assertRejected(try get(a, "/name"), by: a, origin: o, reason: "hostname-mismatch",
                                    "other.example serving for localhost")
        XCTAssertNotNil(record?["verify_error"] as? String, "\(record ?? [:])")
        XCTAssertEqual(presentedPins(record), [pki.pin("wrongname"), pki.pin("intermediate")])
    }

    func testWrongHostnameIsAcceptedWhenDomainNameValidationIsOff() throws {
        let o = try origin("wrongname")
        let a = try gateway(o, security: security(["pinning: public-key", pins("root"), "validates_domain_name: false"]))
        assertServed(try get(a, "/no-name-check"), "/no-name-check", by: o, "validates_domain_name: false")
    }

    func testCommonNameIsNeverUsedForTheHostname() throws {
        let o = try origin("cn-only")
        let a = try gateway(o, security: security())
        let record = assertRejected(try get(a, "/cn"), by: a, origin: o, reason: "hostname-mismatch",
                                    "CN=localhost without a SAN")
        XCTAssertEqual(presentedPins(record), [pki.pin("cn-only"), pki.pin("intermediate")])
    }

    // MARK: certificate pinning

    func testCertificatePinningWithThePinnedRoot() throws {
        let o = try origin()
        let pem = try gateway(o, security: security(["pinning: certificate", "certificates: [\"\(pki.path("root.pem"))\"]"]))
        assertServed(try get(pem, "/cert-pem"), "/cert-pem", by: o, "pinned root.pem, not sent by the server")
        pem.stop()

        let der = try gateway(o, security: security(["pinning: certificate", "certificates: [\"\(pki.path("root.der"))\"]"]))
        assertServed(try get(der, "/cert-der"), "/cert-der", by: o, "pinned root.der")
        der.stop()

        let folder = try makeTemporaryDirectory(prefix: "airlock-pinned-certs")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.copyItem(atPath: pki.path("intermediate.der"), toPath: folder + "/intermediate.cer")
        let inFolder = try gateway(o, security: security(["pinning: certificate", "certificates: [\"\(folder)\"]"]))
        assertServed(try get(inFolder, "/cert-folder"), "/cert-folder", by: o, "a folder holding intermediate.cer")
    }

    func testCertificatePinningWithAnUnrelatedCertificateIsRejected() throws {
        let o = try origin()
        let a = try gateway(o, security: security(["pinning: certificate",
                                                   "certificates: [\"\(pki.path("other-root.pem"))\"]"]))
        // The pinned certificates are the only anchors: the chain does not build to other-root, so OpenSSL's
        // verification against them fails and keeps its own reason.
        let record = assertRejected(try get(a, "/cert-other"), by: a, origin: o, reason: "untrusted-chain",
                                    "only other-root pinned")
        XCTAssertNotNil(record?["verify_error"] as? String, "\(record ?? [:])")
        XCTAssertEqual(record?["pinning"] as? String, "certificate")
        XCTAssertEqual(presentedPins(record), [pki.pin("leaf"), pki.pin("intermediate")])
    }

    // MARK: invalid certificates

    func testSelfSignedLeafWithAllowInvalidAndItsPin() throws {
        let o = try origin("selfsigned")
        let a = try gateway(o, security: security(ca: nil, ["pinning: public-key", pins("selfsigned"),
                                                            "allow_invalid_certificates: true"]))
        assertServed(try get(a, "/self"), "/self", by: o, "self-signed, allowed and pinned")
    }

    func testSelfSignedLeafWithAllowInvalidAndTheWrongPinIsAPinMismatch() throws {
        let o = try origin("selfsigned")
        let a = try gateway(o, security: security(ca: nil, ["pinning: public-key", pins("leaf"),
                                                            "allow_invalid_certificates: true"]))
        let record = assertRejected(try get(a, "/self-wrong"), by: a, origin: o, reason: "pin-mismatch",
                                    "self-signed, allowed, pinned to another key")
        XCTAssertEqual(presentedPins(record), [pki.pin("selfsigned")])
    }

    func testAllowInvalidCertificatesWithoutAPinIsRefusedAtLoad() throws {
        let o = try origin("selfsigned")
        let config = Fixture.tempFile("allow-invalid-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(atPath: config) }
        let yaml = gatewayYAML(o, security: ["allow_invalid_certificates: true"])
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: config))
        let result = try runProcess(AirlockProcess.builtExecutable(), ["run", "--config", config], timeout: 20)
        XCTAssertEqual(result.exitCode, 1, "stdout: \(result.stdoutString)\nstderr: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("routes[0].security.allow_invalid_certificates"), result.stderr)
        XCTAssertFalse(result.stdoutString.contains("airlock.listening"), result.stdoutString)
        XCTAssertEqual(o.acceptedConnections, 0)
    }

    func testExpiredLeafIsRejectedAsExpired() throws {
        let o = try origin("expired")
        let a = try gateway(o, security: security(["pinning: public-key", pins("root")]))
        let record = assertRejected(try get(a, "/expired"), by: a, origin: o, reason: "expired", "expired leaf")
        XCTAssertTrue((record?["verify_error"] as? String ?? "").contains("expired"), "\(record ?? [:])")
        XCTAssertEqual(presentedPins(record), [pki.pin("expired"), pki.pin("intermediate")])
    }

    /// A leaf whose validity has not begun is not "expired": its own reason, OpenSSL's text beside it.
    func testNotYetValidLeafIsRejectedAsNotYetValid() throws {
        let o = try origin("not-yet-valid")
        let a = try gateway(o, security: security(["pinning: public-key", pins("root")]))
        let record = assertRejected(try get(a, "/future"), by: a, origin: o, reason: "not-yet-valid", "not-yet-valid leaf")
        XCTAssertTrue((record?["verify_error"] as? String ?? "").contains("not yet valid"), "\(record ?? [:])")
        XCTAssertEqual(presentedPins(record), [pki.pin("not-yet-valid"), pki.pin("intermediate")])
    }

    /// An https upstream that is a plaintext HTTP server: it answers the ClientHello with a 400,
    /// so the handshake fails before any certificate. That is no trust decision: 502
    /// tls-handshake-failed, code -1200 (NSURLErrorSecureConnectionFailed), OpenSSL's reason in
    /// the message, and no upstream.rejected record.
    func testPlaintextServerIs502TLSHandshakeFailedNotUntrusted() throws {
        let plain = try TCPTestServer { c in
            _ = try? c.read(upTo: 4096, timeout: 5)
            try? c.write(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            c.shutdownWrite()
        }
        defer { plain.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: tls
                match: { host: "*" }
                upstream: https://localhost:\(plain.port)
                security:
                  ca: "\(pki.path("root.pem"))"
            """)
        airlocks.append(a)
        let r = try get(a, "/plain")
        XCTAssertEqual(r.status, 502, text(r))
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "tls-handshake-failed", text(r))
        XCTAssertEqual(body["code"] as? Int, -1200, text(r))
        let message = body["message"] as? String ?? ""
        XCTAssertTrue(message.contains("wrong version number"), message)
        XCTAssertFalse(message.contains("pretending"), message)
        let error = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" }
        XCTAssertEqual(error?["error"] as? String, "tls-handshake-failed", "\(error ?? [:])")
        XCTAssertEqual(error?["route"] as? String, "tls", "\(error ?? [:])")
        XCTAssertNil(a.logRecords().first { $0["event"] as? String == "upstream.rejected" }, "no certificate was judged")
        XCTAssertGreaterThan(plain.acceptedCount, 0)
    }

    // MARK: truncation

    func testTruncatedTLSBodyIsIncompleteForTheClient() throws {
        let o = try origin(mode: .truncate)
        let a = try gateway(o, security: security())
        let r = try Curl.run(["http://127.0.0.1:\(a.port)/t"], timeout: 15)
        XCTAssertNotEqual(r.exitCode, 0, "20 of 100 bytes must not look complete: \(r.stdoutString)")
        XCTAssertEqual(r.exitCode, 18, "partial file: \(r.stderr)")
        XCTAssertEqual(r.stdoutString, "0123456789abcdefghij")
        let access = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" }
        XCTAssertEqual(access?["incomplete"] as? Bool, true, "\(access ?? [:])")
    }

    /// Airlock re-frames a close-delimited body as chunked for an HTTP/1.1 client and writes the last chunk only
    /// when the body completed: a TCP close without close_notify is a truncation, so no last chunk.
    func testCloseDelimitedBodyWithoutCloseNotifyIsIncompleteForTheClient() throws {
        let o = try origin(mode: .closeDelimited)
        let a = try gateway(o, security: security())
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /cd HTTP/1.1\r\nHost: app.example.test\r\n\r\n")
        let raw = try c.readUntilClose(timeout: 10)
        let rawText = String(decoding: raw, as: UTF8.self)
        XCTAssertTrue(rawText.hasPrefix("HTTP/1.1 200"), rawText)
        XCTAssertTrue(rawText.lowercased().contains("transfer-encoding: chunked"), rawText)
        XCTAssertTrue(rawText.contains("hello over tls /cd"), rawText)
        XCTAssertFalse(rawText.hasSuffix("0\r\n\r\n"), "the last chunk says the body is complete: \(rawText.debugDescription)")

        let viaCurl = try Curl.run(["http://127.0.0.1:\(a.port)/cd2"], timeout: 15)
        XCTAssertNotEqual(viaCurl.exitCode, 0, "curl took a truncated body as complete: \(viaCurl.stdoutString)")
        // The fixture logs a request line on its own thread: curl may have finished first.
        XCTAssertTrue(o.waitForRequests(2, timeout: 5))
        XCTAssertEqual(o.requestLines, ["GET /cd HTTP/1.1", "GET /cd2 HTTP/1.1"])
    }

    func testCloseDelimitedBodyWithCloseNotifyIsComplete() throws {
        let o = try origin(mode: .closeDelimitedWithCloseNotify)
        let a = try gateway(o, security: security())
        let r = try Curl.run(["http://127.0.0.1:\(a.port)/cdn", "--write-out", " %{http_code}"], timeout: 15)
        XCTAssertEqual(r.exitCode, 0, r.stderr + o.logText)
        XCTAssertEqual(r.stdoutString, "hello over tls /cdn 200")
        let access = a.waitForLog(timeout: 5) { $0["event"] as? String == "request.access" }
        XCTAssertNil(access?["incomplete"], "\(access ?? [:])")
    }

    // MARK: bodies and load (TLS writes are batched with the plain ones)

    /// Request bodies of several MiB go out as many TLS records, encrypted into the
    /// stream's write buffer and written in batches: they arrive whole, with
    /// Content-Length and re-framed as chunked.
    func testLargeRequestBodiesReachTheTLSOriginWhole() throws {
        let o = try origin()
        let a = try gateway(o, security: security())
        let payload = patternBytes(count: 3 * 1024 * 1024 + 17)
        let file = Fixture.tempFile("tls-upload.bin")
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data(payload)))
        let want = try sha256Hex(payload)
        for extra in [[], ["-H", "Transfer-Encoding: chunked"]] {
            let r = try Curl.run(["http://127.0.0.1:\(a.port)/upload", "--data-binary", "@\(file)"] + extra, timeout: 60)
            XCTAssertEqual(r.exitCode, 0, r.stderr + o.logText)
            XCTAssertEqual(r.stdoutString, "hello over tls /upload")
        }
        XCTAssertTrue(o.waitForBodies(2, timeout: 5), o.logText)
        XCTAssertEqual(o.requestBodies.map(\.bytes), [payload.count, payload.count])
        XCTAssertEqual(o.requestBodies.map(\.sha256), [want, want])
    }

    /// Many clients at once over pooled TLS upstream connections: every response reaches
    /// the client that asked for it.
    func testConcurrentClientsOverTLSEachGetTheirOwnResponses() throws {
        let o = try origin()
        let a = try gateway(o, security: security())
        let clients = try (0..<16).map { _ in try RawClient(port: a.port) }
        defer { for c in clients { c.close() } }
        for round in 0..<10 {
            for (i, c) in clients.enumerated() {
                try c.send("GET /c\(i)/r\(round) HTTP/1.1\r\nHost: app.example.test\r\n\r\n")
            }
            for (i, c) in clients.enumerated() {
                let r = try c.readResponse(timeout: 10)
                XCTAssertEqual(r.status, 200)
                XCTAssertEqual(text(r), "hello over tls /c\(i)/r\(round)")
            }
        }
        // The origin logs each request line from its own process: wait (bounded) for the log.
        XCTAssertTrue(o.waitForRequests(160, timeout: 5), o.logText)
        XCTAssertEqual(o.requestLines.count, 160)
    }

    // MARK: sessions

    func testSessionIsResumedOnANewUpstreamConnection() throws {
        let o = try origin()
        let a = try gateway(o, security: security(["pinning: public-key", pins("intermediate")]),
                            limits: ["max_idle_per_upstream": "0"])
        for path in ["/r1", "/r2"] {
            let r = try Curl.run(["-H", "Connection: close", "http://127.0.0.1:\(a.port)\(path)"], timeout: 15)
            XCTAssertEqual(r.exitCode, 0, r.stderr)
            XCTAssertEqual(r.stdoutString, "hello over tls \(path)")
        }
        XCTAssertTrue(o.waitForHandshakes(2, timeout: 5), o.logText)
        XCTAssertEqual(o.acceptedConnections, 2, "not pooled: \(o.logText)")
        XCTAssertEqual(o.handshakes, 2, o.logText)
        XCTAssertEqual(o.resumedHandshakes, 1, "the second connection resumes the first one's session: \(o.logText)")
        XCTAssertEqual(o.serverNames, ["localhost", "localhost"])
    }

    /// Regression (a use-after-free that crashed Airlock under load): a connection that will
    /// resume the cached session holds its own reference to it, so the cache replacing and
    /// freeing its copy meanwhile (other connections' new tickets) cannot free it under the
    /// connecting one. Eight clients in parallel, each request on a fresh upstream
    /// connection, sessions replaced all the while: every response arrives whole and
    /// Airlock stays up.
    func testSessionReplacedWhileAnotherConnectionIsConnectingStaysValid() throws {
        let o = try origin()
        let a = try gateway(o, security: security(), limits: ["max_idle_per_upstream": "0"])
        let threads = 8, perThread = 25
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                let path = "/s\(t)-\(i)"
                do {
                    let c = try RawClient(port: a.port)
                    defer { c.close() }
                    let r = try c.exchange("GET \(path) HTTP/1.1\r\nHost: app.example.test\r\nConnection: close\r\n\r\n")
                    let body = String(decoding: r.body, as: UTF8.self)
                    if r.status != 200 || body != "hello over tls \(path)" {
                        failures.add("\(path): \(r.status) \(body)")
                    }
                } catch {
                    failures.add("\(path): \(error)")
                }
            }
        }
        XCTAssertEqual(failures.all, [], a.stderrText)
        XCTAssertNil(a.waitForExit(timeout: 0.2), "Airlock exited:\n\(a.stderrText)")
        XCTAssertEqual(o.requestLines.count, threads * perThread, o.logText)
        XCTAssertGreaterThan(o.resumedHandshakes, 0, "sessions were resumed: \(o.logText)")
        XCTAssertGreaterThan(o.handshakes, threads, "every request had its own upstream connection")
    }

    /// Two routes to one origin under different policies: a session cached under the trusting route is never
    /// offered under the other, so its pin check runs on a full handshake and fails.
    func testResumedSessionNeverSkipsAnotherRoutesPinCheck() throws {
        let o = try origin()
        let yaml = """
        listen: 127.0.0.1:0
        workers: 1
        \(Fixture.limitsYAML(["max_idle_per_upstream": "0"]))
        routes:
          - name: other
            match: { host: "*", path_prefix: /other/ }
            upstream: https://localhost:\(o.port)
            security:
              ca: "\(pki.path("root.pem"))"
              pinning: public-key
              \(pins("other-root"))
          - name: tls
            match: { host: "*" }
            upstream: https://localhost:\(o.port)
            security:
              ca: "\(pki.path("root.pem"))"
        """
        let a = try Fixture.start(yaml)
        airlocks.append(a)
        assertServed(try get(a, "/a"), "/a", by: o, "trusting route, first")
        assertServed(try get(a, "/b"), "/b", by: o, "trusting route, second")
        XCTAssertTrue(o.waitForHandshakes(2, timeout: 5), o.logText)
        XCTAssertEqual(o.resumedHandshakes, 1, o.logText)

        let r = try get(a, "/other/x")
        XCTAssertEqual(r.status, 502, text(r))
        XCTAssertEqual(Fixture.json(r.body)["reason"] as? String, "pin-mismatch", text(r))
        XCTAssertTrue(o.waitForHandshakes(3, timeout: 5), o.logText)
        XCTAssertEqual(o.resumedHandshakes, 1, "the pinned route must not resume the other route's session: \(o.logText)")
        XCTAssertEqual(o.requestLines, ["GET /a HTTP/1.1", "GET /b HTTP/1.1"])
        let record = a.waitForLog(timeout: 5) { $0["event"] as? String == "upstream.rejected" }
        XCTAssertEqual(record?["route"] as? String, "other")
    }

    // MARK: forward proxy

    func testAbsoluteFormHTTPSOnAnOriginRouteIsOriginatedOverTLS() throws {
        let o = try origin()
        let yaml = """
        listen: 127.0.0.1:0
        workers: 1
        \(Fixture.limitsYAML([:]))
        routes:
          - name: default
            match: { host: "*" }
            upstream: origin
            security: { ca: "\(pki.path("root.pem"))" }
        """
        let a = try Fixture.start(yaml)
        airlocks.append(a)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("GET \(o.url("/fwd")) HTTP/1.1\r\nHost: localhost:\(o.port)\r\n\r\n")
        assertServed(r, "/fwd", by: o, "absolute-form https:// on an origin route")
        XCTAssertEqual(o.serverNames, ["localhost"])
    }

    func testAbsoluteFormHTTPSOnAnOriginRouteUsesSystemTrustByDefault() throws {
        let o = try origin()
        let a = try Fixture.start(Fixture.forwardConfig())
        airlocks.append(a)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try c.exchange("GET \(o.url("/fwd-untrusted")) HTTP/1.1\r\nHost: localhost:\(o.port)\r\n\r\n")
        XCTAssertEqual(r.status, 502, text(r))
        XCTAssertEqual(Fixture.json(r.body)["reason"] as? String, "untrusted-chain", text(r))
        XCTAssertFalse(o.waitForRequests(1, timeout: 0.5), o.logText)
    }

    // MARK: shutdown

    /// After TLS exchanges (trusted and rejected), SIGTERM ends Airlock promptly with status 0. Repeated because a
    /// hang here has been seen only on some runs (Gateway deinit: Worker frees its EventLoop before its Resolver,
    /// and `evdns_base_free` then locks the freed event_base).
    func testAirlockExitsPromptlyOnSIGTERMAfterTLSExchanges() throws {
        let o = try origin()
        for round in 0..<10 {
            let a = try gateway(o, security: security(["pinning: public-key", pins(round % 2 == 0 ? "root" : "other-root")]))
            let r = try get(a, "/stop-\(round)")
            XCTAssertEqual(r.status, round % 2 == 0 ? 200 : 502, text(r))
            a.signal(SIGTERM)
            let status = a.waitForExit(timeout: 5)
            let tail = a.logLines.suffix(4).joined(separator: "\n")
            XCTAssertEqual(status, 0, "round \(round): no exit within 5 s of SIGTERM (nil) or a bad status\n\(tail)")
            XCTAssertNotNil(a.waitForLog(timeout: 1) { $0["event"] as? String == "airlock.stopped" },
                            "round \(round): never logged airlock.stopped\n\(tail)")
            a.stop()
            if status != 0 { break }
        }
    }
}

/// Failures collected from concurrent clients.
private final class Failures: Sendable {
    private let items = Mutex<[String]>([])
    func add(_ s: String) { items.withLock { $0.append(s) } }
    var all: [String] { items.withLock { $0 } }
}
