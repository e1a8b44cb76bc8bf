import AirlockTesting
import Foundation
import Glibc
import XCTest

/// Self-tests of the TLS fixtures (`TLSTestPKI`, `TLSTestOrigin`) against the openssl and curl CLIs:
/// no Airlock involved.
final class TLSFixtureSelfTests: XCTestCase {
    private static let openssl = "/usr/bin/openssl"
    private var pki: TLSTestPKI!

    override func setUpWithError() throws {
        try Requirement.tool(Self.openssl)
        pki = try TLSTestPKI.generate()
    }

    override func tearDown() {
        pki?.remove()
        pki = nil
    }

    /// Runs `/bin/sh -c script sh args...` (so paths travel as "$1", "$2", ...), bounded by `timeout`.
    private func shell(_ script: String, _ args: [String] = [], timeout: Double = 20) throws -> ProcessResult {
        try runProcess("/bin/sh", ["-c", script, "sh"] + args, timeout: timeout)
    }

    private func curl(_ origin: TLSTestOrigin, _ path: String, ca: String = "root.pem") throws -> ProcessResult {
        try Curl.run(["--cacert", pki.path(ca), origin.url(path)], timeout: 10)
    }

    /// `openssl s_client` to the origin as `localhost`; `request` (if any) is piped in and s_client reads until
    /// the origin closes, so TLS 1.3 session tickets (sent after the handshake) arrive before it exits.
    private func sClient(_ origin: TLSTestOrigin, sessionArgs: [String] = [], tls12: Bool = false,
                         request: String? = nil) throws -> ProcessResult {
        var command = "timeout 15 \(Self.openssl) s_client -connect 127.0.0.1:\(origin.port) -servername localhost"
            + " -CAfile \"$1\" -verify_return_error"
        if tls12 { command += " -tls1_2" }
        var args = [pki.path("root.pem")]
        for (index, arg) in sessionArgs.enumerated() {
            command += " \"$\(index + 2)\""
            args.append(arg)
        }
        if let request {
            command = "printf '%s' \"$\(args.count + 1)\" | \(command) -ign_eof"
            args.append(request)
        } else {
            command += " </dev/null"
        }
        return try shell(command + " 2>&1", args, timeout: 30)
    }

    // MARK: PKI

    func testEveryPinEqualsTheOpenSSLPipeline() throws {
        let expected = ["cn-only", "expired", "intermediate", "leaf", "other-leaf", "other-root", "root",
                        "selfsigned", "wrongname"]
        XCTAssertEqual(pki.names, expected)
        var seen = Set<String>()
        for name in pki.names {
            let result = try shell("""
                \(Self.openssl) x509 -pubkey -noout -in "$1" | \(Self.openssl) pkey -pubin -outform der \
                | \(Self.openssl) dgst -sha256 -binary | base64
                """, [pki.path("\(name).pem")])
            XCTAssertEqual(result.exitCode, 0, result.stderr)
            let digest = result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(digest.count, 44, name)
            XCTAssertEqual(pki.pin(name), "sha256/" + digest, name)
            seen.insert(pki.pin(name))
        }
        XCTAssertEqual(seen.count, expected.count, "every certificate has its own key")
        XCTAssertEqual(pki.pin("no-such-cert"), "sha256/unknown-certificate-no-such-cert")
    }

    func testDERCopiesArePEMContents() throws {
        for name in ["root", "intermediate", "leaf", "other-root"] {
            let fromDER = try runProcess(Self.openssl, ["x509", "-inform", "der", "-in", pki.path("\(name).der")])
            XCTAssertEqual(fromDER.exitCode, 0, fromDER.stderr)
            let pem = try String(contentsOfFile: pki.path("\(name).pem"), encoding: .utf8)
            XCTAssertEqual(fromDER.stdoutString, pem, name)
        }
    }

    func testChainFilesHoldLeafThenIntermediate() throws {
        let leaf = try String(contentsOfFile: pki.path("leaf.pem"), encoding: .utf8)
        let intermediate = try String(contentsOfFile: pki.path("intermediate.pem"), encoding: .utf8)
        XCTAssertEqual(try String(contentsOfFile: pki.path("leaf-chain.pem"), encoding: .utf8), leaf + intermediate)
        let otherLeaf = try String(contentsOfFile: pki.path("other-leaf.pem"), encoding: .utf8)
        XCTAssertEqual(try String(contentsOfFile: pki.path("other-leaf-chain.pem"), encoding: .utf8), otherLeaf,
                       "other-leaf hangs straight off other-root, which a server does not send")
        let attributes = try FileManager.default.attributesOfItem(atPath: pki.path("leaf.key"))
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }

    func testOpenSSLVerifiesEachChainAsDesigned() throws {
        func verify(_ args: [String]) throws -> ProcessResult {
            try runProcess(Self.openssl, ["verify"] + args)
        }
        let root = pki.path("root.pem"), intermediate = pki.path("intermediate.pem")

        let leaf = try verify(["-CAfile", root, "-untrusted", intermediate, "-verify_hostname", "localhost",
                               "-verify_ip", "127.0.0.1", "-purpose", "sslserver", pki.path("leaf.pem")])
        XCTAssertEqual(leaf.exitCode, 0, leaf.stderr)
        XCTAssertTrue(leaf.stdoutString.contains("OK"), leaf.stdoutString)

        let expired = try verify(["-CAfile", root, "-untrusted", intermediate, pki.path("expired.pem")])
        XCTAssertNotEqual(expired.exitCode, 0)
        XCTAssertTrue((expired.stdoutString + expired.stderr).contains("certificate has expired"), expired.stderr)

        let wrongName = try verify(["-CAfile", root, "-untrusted", intermediate, "-verify_hostname", "localhost",
                                    pki.path("wrongname.pem")])
        XCTAssertNotEqual(wrongName.exitCode, 0)
        XCTAssertTrue((wrongName.stdoutString + wrongName.stderr).contains("hostname mismatch"), wrongName.stderr)
        let wrongNameChainOnly = try verify(["-CAfile", root, "-untrusted", intermediate, pki.path("wrongname.pem")])
        XCTAssertEqual(wrongNameChainOnly.exitCode, 0, "only the name is wrong: \(wrongNameChainOnly.stderr)")

        let otherUnderRoot = try verify(["-CAfile", root, "-untrusted", intermediate, pki.path("other-leaf.pem")])
        XCTAssertNotEqual(otherUnderRoot.exitCode, 0, "the other chain is unrelated to root")
        let other = try verify(["-CAfile", pki.path("other-root.pem"), pki.path("other-leaf.pem")])
        XCTAssertEqual(other.exitCode, 0, other.stderr)

        let selfSigned = try verify(["-CAfile", pki.path("selfsigned.pem"), pki.path("selfsigned.pem")])
        XCTAssertEqual(selfSigned.exitCode, 0, selfSigned.stderr)
        let selfSignedUnderRoot = try verify(["-CAfile", root, pki.path("selfsigned.pem")])
        XCTAssertNotEqual(selfSignedUnderRoot.exitCode, 0)

        let text = try runProcess(Self.openssl, ["x509", "-noout", "-text", "-in", pki.path("selfsigned.pem")])
        XCTAssertTrue(text.stdoutString.contains("CA:FALSE"), "selfsigned is a leaf, not a CA")
        let cnOnly = try runProcess(Self.openssl, ["x509", "-noout", "-text", "-in", pki.path("cn-only.pem")])
        XCTAssertFalse(cnOnly.stdoutString.contains("Subject Alternative Name"))
        XCTAssertTrue(cnOnly.stdoutString.contains("CN = localhost"), cnOnly.stdoutString)
    }

    // MARK: Origin

    func testCurlFetchesOverTLSWithKeepAlive() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let result = try Curl.run(["--cacert", pki.path("root.pem"), "--data-binary", "abc", origin.url("/x"),
                                   "--write-out", " %{http_code} %{content_type}", "-X", "GET", origin.url("/y")],
                                  timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr + origin.logText)
        XCTAssertEqual(result.stdoutString, "hello over tls /x 200 text/plainhello over tls /y 200 text/plain")
        XCTAssertTrue(origin.waitForRequests(2, timeout: 5), origin.logText)
        XCTAssertEqual(origin.requestLines, ["GET /x HTTP/1.1", "GET /y HTTP/1.1"])
        XCTAssertEqual(origin.acceptedConnections, 1, "keep-alive: \(origin.logText)")
        XCTAssertEqual(origin.handshakes, 1)
        XCTAssertEqual(origin.resumedHandshakes, 0)
        XCTAssertEqual(origin.serverNames, ["localhost"])
        XCTAssertEqual(origin.url("/x", host: "127.0.0.1"), "https://127.0.0.1:\(origin.port)/x")
    }

    func testCurlByIPAddressAndWithoutTheRightRoot() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let byIP = try Curl.run(["--cacert", pki.path("root.pem"), origin.url("/ip", host: "127.0.0.1")], timeout: 10)
        XCTAssertEqual(byIP.exitCode, 0, byIP.stderr)
        XCTAssertEqual(byIP.stdoutString, "hello over tls /ip")
        let wrongRoot = try curl(origin, "/no", ca: "other-root.pem")
        XCTAssertEqual(wrongRoot.exitCode, 60, "peer certificate cannot be authenticated: \(wrongRoot.stderr)")
        XCTAssertTrue(origin.waitForHandshakes(2, timeout: 5), origin.logText)
        XCTAssertEqual(origin.handshakeFailures.count, 1, origin.logText)
        XCTAssertEqual(origin.serverNames, [nil], "no SNI for an IP address")
        XCTAssertEqual(origin.requestLines, ["GET /ip HTTP/1.1"], "a rejected origin never sees the request")
    }

    func testEachBadChainFailsCurlTheWayItShould() throws {
        let cases: [(chain: String, key: String, ca: String, exit: Int32, message: String)] = [
            ("wrongname-chain.pem", "wrongname.key", "root.pem", 60, "no alternative certificate subject name"),
            ("expired-chain.pem", "expired.key", "root.pem", 60, "expired"),
            ("other-leaf-chain.pem", "other-leaf.key", "root.pem", 60, "unable to get local issuer certificate"),
            ("selfsigned-chain.pem", "selfsigned.key", "root.pem", 60, "self-signed certificate"),
            ("other-leaf-chain.pem", "other-leaf.key", "other-root.pem", 0, ""),
            ("selfsigned-chain.pem", "selfsigned.key", "selfsigned.pem", 0, ""),
        ]
        for item in cases {
            let origin = try TLSTestOrigin(pki: pki, chain: item.chain, key: item.key)
            defer { origin.stop() }
            let result = try curl(origin, "/c", ca: item.ca)
            XCTAssertEqual(result.exitCode, item.exit, "\(item.chain) under \(item.ca): \(result.stderr)")
            if item.exit == 0 {
                XCTAssertEqual(result.stdoutString, "hello over tls /c")
            } else {
                XCTAssertTrue(result.stderr.contains(item.message), "\(item.chain): \(result.stderr)")
                XCTAssertTrue(origin.requestLines.isEmpty, origin.logText)
            }
        }
    }

    func testCurlResumesItsSessionOnANewConnection() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let result = try Curl.run(["--cacert", pki.path("root.pem"), "-H", "Connection: close",
                                   origin.url("/a"), origin.url("/b")], timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stdoutString, "hello over tls /ahello over tls /b")
        XCTAssertTrue(origin.waitForHandshakes(2, timeout: 5), origin.logText)
        XCTAssertEqual(origin.acceptedConnections, 2, origin.logText)
        XCTAssertEqual(origin.resumedHandshakes, 1, origin.logText)
    }

    func testOpenSSLSessionResumptionOverTLS13() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let session = pki.path("tls13.session")
        let request = "GET /s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        let first = try sClient(origin, sessionArgs: ["-sess_out", session], request: request)
        XCTAssertEqual(first.exitCode, 0, first.stdoutString)
        XCTAssertTrue(first.stdoutString.contains("New, TLSv1.3"), first.stdoutString)
        XCTAssertTrue(first.stdoutString.contains("hello over tls /s"), first.stdoutString)
        let second = try sClient(origin, sessionArgs: ["-sess_in", session], request: request)
        XCTAssertEqual(second.exitCode, 0, second.stdoutString)
        XCTAssertTrue(second.stdoutString.contains("Reused, TLSv1.3"), second.stdoutString)
        XCTAssertTrue(origin.waitForHandshakes(2, timeout: 5), origin.logText)
        XCTAssertEqual(origin.handshakes, 2)
        XCTAssertEqual(origin.resumedHandshakes, 1, origin.logText)
        XCTAssertEqual(origin.versions, ["TLSv1.3", "TLSv1.3"])
    }

    func testOpenSSLSessionResumptionOverTLS12() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let session = pki.path("tls12.session")
        let first = try sClient(origin, sessionArgs: ["-sess_out", session], tls12: true)
        XCTAssertEqual(first.exitCode, 0, first.stdoutString)
        XCTAssertTrue(first.stdoutString.contains("New, TLSv1.2"), first.stdoutString)
        let second = try sClient(origin, sessionArgs: ["-sess_in", session], tls12: true)
        XCTAssertEqual(second.exitCode, 0, second.stdoutString)
        XCTAssertTrue(second.stdoutString.contains("Reused, TLSv1.2"), second.stdoutString)
        XCTAssertTrue(origin.waitForHandshakes(2, timeout: 5), origin.logText)
        XCTAssertEqual(origin.resumedHandshakes, 1, origin.logText)
        XCTAssertEqual(origin.versions, ["TLSv1.2", "TLSv1.2"])
    }

    func testTLS11IsRefused() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let result = try Curl.run(["--cacert", pki.path("root.pem"), "--tlsv1.1", "--tls-max", "1.1",
                                   origin.url("/old")], timeout: 10)
        XCTAssertNotEqual(result.exitCode, 0, result.stdoutString)
        XCTAssertTrue(origin.waitForHandshakes(1, timeout: 5), origin.logText)
        XCTAssertEqual(origin.handshakes, 0, origin.logText)
        XCTAssertTrue(origin.requestLines.isEmpty)
    }

    func testTruncateModeMakesCurlFail() throws {
        let origin = try TLSTestOrigin(pki: pki, mode: .truncate)
        defer { origin.stop() }
        let result = try curl(origin, "/t")
        XCTAssertNotEqual(result.exitCode, 0, "curl must not take 20 of 100 bytes as complete")
        XCTAssertEqual(result.exitCode, 18, "partial file: \(result.stderr)")
        XCTAssertEqual(result.stdoutString, "0123456789abcdefghij")
        XCTAssertEqual(origin.requestLines, ["GET /t HTTP/1.1"])
    }

    /// curl sets SSL_OP_IGNORE_UNEXPECTED_EOF, so it takes a close-delimited body without close_notify as complete
    /// (exit 0 with curl 7.88); `openssl s_client` does not, and is what tells the two modes apart here.
    func testCloseDelimitedWithoutCloseNotifyIsAnUnexpectedEOF() throws {
        let origin = try TLSTestOrigin(pki: pki, mode: .closeDelimited)
        defer { origin.stop() }
        let result = try sClient(origin, request: "GET /cd HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertTrue(result.stdoutString.contains("Connection: close\r\n\r\nhello over tls /cd"), result.stdoutString)
        XCTAssertFalse(result.stdoutString.contains("Content-Length"))
        XCTAssertNotEqual(result.exitCode, 0, result.stdoutString)
        XCTAssertTrue(result.stdoutString.contains("unexpected eof while reading"), result.stdoutString)
        XCTAssertTrue(origin.logText.contains("reason=close-delimited without close_notify"), origin.logText)
    }

    func testCloseDelimitedWithCloseNotifyIsComplete() throws {
        let origin = try TLSTestOrigin(pki: pki, mode: .closeDelimitedWithCloseNotify)
        defer { origin.stop() }
        let result = try sClient(origin, request: "GET /cd HTTP/1.1\r\nHost: localhost\r\n\r\n")
        XCTAssertEqual(result.exitCode, 0, result.stdoutString)
        XCTAssertTrue(result.stdoutString.contains("Connection: close\r\n\r\nhello over tls /cd"), result.stdoutString)
        XCTAssertFalse(result.stdoutString.contains("unexpected eof"), result.stdoutString)
        let viaCurl = try curl(origin, "/cd2")
        XCTAssertEqual(viaCurl.exitCode, 0, viaCurl.stderr)
        XCTAssertEqual(viaCurl.stdoutString, "hello over tls /cd2")
    }

    func testStopAndDeinitEndTheOrigin() throws {
        let origin = try TLSTestOrigin(pki: pki)
        let pid = origin.pid, port = origin.port
        origin.stop()
        origin.stop()
        XCTAssertEqual(kill(pid, 0), -1, "reaped")
        let refused = try Curl.run(["--cacert", pki.path("root.pem"), "https://localhost:\(port)/"], timeout: 5)
        XCTAssertEqual(refused.exitCode, 7, refused.stderr)

        var dropped: TLSTestOrigin? = try TLSTestOrigin(pki: pki)
        let droppedPID = try XCTUnwrap(dropped?.pid)
        XCTAssertEqual(kill(droppedPID, 0), 0)
        dropped = nil
        XCTAssertEqual(kill(droppedPID, 0), -1, "deinit stopped and reaped it")
    }

    func testMissingKeyFailsToStartWithItsStderr() throws {
        XCTAssertThrowsError(try TLSTestOrigin(pki: pki, key: "no-such.key", startTimeout: 10)) { error in
            let failure = error as? AirlockTestingError
            XCTAssertEqual(failure?.kind, .process, "\(error)")
            XCTAssertTrue(failure?.message.contains("no-such.key") ?? false, "\(error)")
        }
    }
}
