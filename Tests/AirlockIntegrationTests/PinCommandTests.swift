import AirlockTesting
import Foundation
import XCTest

/// `airlock pin`: the pins it prints equal the openssl pipeline's, for files and for a
/// live server's chain.
final class PinCommandTests: XCTestCase {
    private var pki: TLSTestPKI!

    override func setUpWithError() throws { pki = try TLSTestPKI.generate() }
    override func tearDown() { pki?.remove() }

    private func opensslPin(_ file: String) throws -> String {
        let r = try runProcess("/bin/sh", ["-c",
            "openssl x509 -pubkey -noout -in \"$0\" | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            file])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        return "sha256/" + r.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func pins(in output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            let t = line.trimmingCharacters(in: .whitespaces)
            return t.hasPrefix("pin:") ? t.dropFirst(4).trimmingCharacters(in: .whitespaces) : nil
        }
    }

    func testPinOfFilesEqualsOpenSSLPipeline() throws {
        for name in ["leaf", "intermediate", "root", "selfsigned"] {
            let r = try runProcess(AirlockProcess.builtExecutable(), ["pin", "--file", pki.path("\(name).pem")])
            XCTAssertEqual(r.exitCode, 0, r.stderr)
            XCTAssertEqual(pins(in: r.stdoutString), [try opensslPin(pki.path("\(name).pem"))], name)
            XCTAssertTrue(r.stdoutString.contains("subject:") && r.stdoutString.contains("expires:"), r.stdoutString)
        }
        // DER and bundles too.
        let der = try runProcess(AirlockProcess.builtExecutable(), ["pin", "--file", pki.path("leaf.der")])
        XCTAssertEqual(pins(in: der.stdoutString), [try opensslPin(pki.path("leaf.pem"))])
        let bundle = try runProcess(AirlockProcess.builtExecutable(), ["pin", "--file", pki.path("leaf-chain.pem")])
        XCTAssertEqual(pins(in: bundle.stdoutString), [pki.pin("leaf"), pki.pin("intermediate")])
    }

    func testPinOfALiveServerListsThePresentedChain() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        let r = try runProcess(AirlockProcess.builtExecutable(),
                               ["pin", "localhost:\(origin.port)", "--ca", pki.path("root.pem")])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(pins(in: r.stdoutString), [pki.pin("leaf"), pki.pin("intermediate")])
        XCTAssertTrue(r.stdoutString.contains("verification: ok"), r.stdoutString)
        let untrusted = try runProcess(AirlockProcess.builtExecutable(), ["pin", "localhost:\(origin.port)"])
        XCTAssertEqual(untrusted.exitCode, 0, untrusted.stderr)
        XCTAssertFalse(untrusted.stdoutString.contains("verification: ok"), "the test root is not in the system store")
    }

    func testUnreadableFileIsAClearError() throws {
        let r = try runProcess(AirlockProcess.builtExecutable(), ["pin", "--file", "/nonexistent/cert.pem"])
        XCTAssertEqual(r.exitCode, 1)
        XCTAssertTrue(r.stderr.contains("/nonexistent/cert.pem"), r.stderr)
    }
}
