@testable import AirlockIO
import AirlockTesting
import COpenSSL
import Foundation
import XCTest

/// The system trust of a `TLSClientContext` (`TLSClientContext+SystemTrust.swift`): when the
/// hashed directory holds exactly the bundle's certificates, the bundle is not parsed into the
/// context and the directory is read when a chain first needs a CA; otherwise the bundle is
/// loaded as `SSL_CTX_set_default_verify_paths` always did. Either way every verification
/// gives the same answer. The "system" is a bundle and a hashed directory made per test from a
/// `TLSTestPKI`, named by `SSL_CERT_FILE` and `SSL_CERT_DIR` (which OpenSSL reads the same way).
final class TLSSystemTrustTests: XCTestCase {
    private var pki: TLSTestPKI!
    private var dir = ""
    private var saved: [String: String?] = [:]

    override func setUpWithError() throws {
        try Requirement.tool(OpenSSLServer.executable)
        pki = try TLSTestPKI.generate()
        dir = try makeTemporaryDirectory(prefix: "airlock-system-trust")
        for name in ["SSL_CERT_FILE", "SSL_CERT_DIR"] { saved[name] = getenv(name).map { String(cString: $0) } }
    }

    override func tearDown() {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        try? FileManager.default.removeItem(atPath: dir)
        pki?.remove()
    }

    /// The bundle (the PEM files of `bundle` concatenated; nil: no bundle file) and the hashed
    /// directory (`directory`, rehashed by `openssl rehash`), named by the environment.
    private func system(bundle: [String]?, directory: [String]) throws {
        let certs = dir + "/certs", file = dir + "/bundle.pem"
        try FileManager.default.createDirectory(atPath: certs, withIntermediateDirectories: true)
        for (i, name) in directory.enumerated() {
            try FileManager.default.copyItem(atPath: pki.path(name), toPath: "\(certs)/\(i)-\(name)")
        }
        let rehash = try runProcess(OpenSSLServer.executable, ["rehash", certs])
        XCTAssertEqual(rehash.exitCode, 0, rehash.stderr)
        if let bundle {
            let text = try bundle.map { try String(contentsOfFile: pki.path($0), encoding: .utf8) }.joined()
            try text.write(toFile: file, atomically: true, encoding: .utf8)
        }
        setenv("SSL_CERT_FILE", bundle == nil ? dir + "/no-such-bundle.pem" : file, 1)
        setenv("SSL_CERT_DIR", certs, 1)
    }

    /// The chain in a PEM file as a STACK_OF(X509), freed after `body`.
    private func withChain<T>(_ file: String, _ body: (OpaquePointer) -> T) throws -> T {
        let bio = try XCTUnwrap(BIO_new_file(pki.path(file), "r"))
        defer { BIO_free(bio) }
        let stack = try XCTUnwrap(airlock_sk_X509_new_null())
        defer { airlock_sk_X509_pop_free(stack) }
        while let x = PEM_read_bio_X509(bio, nil, nil, nil) { _ = airlock_sk_X509_push(stack, x) }
        ERR_clear_error()
        return body(stack)
    }

    /// `verify` against the default trust for localhost: "ok <chain length>" or the error code.
    private func verdict(_ context: TLSClientContext, _ chain: String) throws -> String {
        try withChain(chain) { stack in
            switch context.verify(peerChain: stack, anchors: .defaultTrust, hostname: "localhost") {
            case .success(let built): return "ok \(built.count)"
            case .failure(let e): return "error \(e.code)"
            }
        }
    }

    /// Certificates in the context's store (loaded ones; the directory's are added when read).
    private func storedObjects(_ context: TLSClientContext) -> Int32 {
        OPENSSL_sk_num(X509_STORE_get0_objects(SSL_CTX_get_cert_store(context.ctx)))
    }

    func testABundleTheDirectoryHoldsIsReadFromTheDirectoryWhenAChainNeedsIt() throws {
        try system(bundle: ["root.pem"], directory: ["root.pem"])
        let context = try TLSClientContext(caFiles: [], pinnedAnchors: [])
        XCTAssertEqual(context.systemTrust, .directory)
        XCTAssertEqual(storedObjects(context), 0, "nothing parsed before a chain needs it")
        XCTAssertEqual(try verdict(context, "leaf-chain.pem"), "ok 3")
        XCTAssertEqual(storedObjects(context), 1, "the root, read from the directory")
        // The refusals are the ones the whole bundle gave: unknown CA (20), wrong name (62), expired (10).
        XCTAssertEqual(try verdict(context, "other-leaf-chain.pem"), "error 20")
        XCTAssertEqual(try verdict(context, "wrongname-chain.pem"), "error 62")
        XCTAssertEqual(try verdict(context, "expired-chain.pem"), "error 10")
        XCTAssertEqual(try verdict(context, "leaf-chain.pem"), "ok 3", "again, from the store")
    }

    func testABundleCertificateMissingFromTheDirectoryKeepsTheBundleLoaded() throws {
        try system(bundle: ["root.pem", "other-root.pem"], directory: ["root.pem"])
        let context = try TLSClientContext(caFiles: [], pinnedAnchors: [])
        XCTAssertEqual(context.systemTrust, .bundleAndDirectory)
        XCTAssertEqual(storedObjects(context), 2)
        XCTAssertEqual(try verdict(context, "other-leaf-chain.pem"), "ok 2", "trusted through the bundle alone")
        XCTAssertEqual(try verdict(context, "leaf-chain.pem"), "ok 3")
    }

    func testADirectoryCertificateTheBundleLacksUnderABundleHashKeepsTheBundleLoaded() throws {
        // The directory's file for the root's subject hash also holds other-root: for that subject
        // the bundle alone used to answer, so reading the directory instead would offer more.
        try system(bundle: ["root.pem"], directory: ["root.pem"])
        let hashed = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dir + "/certs").first { $0.hasSuffix(".0") })
        let extra = try String(contentsOfFile: pki.path("other-root.pem"), encoding: .utf8)
        let path = dir + "/certs/" + hashed
        let resolved = try FileManager.default.destinationOfSymbolicLink(atPath: path)
        let target = resolved.hasPrefix("/") ? resolved : dir + "/certs/" + resolved
        try (String(contentsOfFile: target, encoding: .utf8) + extra).write(toFile: target, atomically: false, encoding: .utf8)
        let context = try TLSClientContext(caFiles: [], pinnedAnchors: [])
        XCTAssertEqual(context.systemTrust, .bundleAndDirectory)
        XCTAssertEqual(try verdict(context, "leaf-chain.pem"), "ok 3")
    }

    func testABundleWithTrustSettingsKeepsTheBundleLoaded() throws {
        try system(bundle: ["root.pem"], directory: ["root.pem"])
        let trusted = try runProcess(OpenSSLServer.executable, ["x509", "-in", pki.path("root.pem"), "-addtrust", "serverAuth",
                                                                "-out", dir + "/bundle.pem"])
        XCTAssertEqual(trusted.exitCode, 0, trusted.stderr)
        XCTAssertTrue(try String(contentsOfFile: dir + "/bundle.pem", encoding: .utf8).contains("TRUSTED CERTIFICATE"))
        let context = try TLSClientContext(caFiles: [], pinnedAnchors: [])
        XCTAssertEqual(context.systemTrust, .bundleAndDirectory)
        XCTAssertEqual(try verdict(context, "leaf-chain.pem"), "ok 3")
    }

    func testWithoutABundleTheDirectoryIsTheTrust() throws {
        try system(bundle: nil, directory: ["other-root.pem"])
        let context = try TLSClientContext(caFiles: [], pinnedAnchors: [])
        XCTAssertEqual(context.systemTrust, .directory)
        XCTAssertEqual(try verdict(context, "other-leaf-chain.pem"), "ok 2")
        XCTAssertEqual(try verdict(context, "leaf-chain.pem"), "error 20")
    }

    /// The first TLS upstream after start: a fresh context, a real handshake with a local
    /// origin, verified against the system trust read from the directory on demand; and the
    /// same origin refused when the directory does not hold its CA (fail closed).
    func testTheFirstHandshakeIsVerifiedAgainstTheDirectoryAndRefusedWithoutItsCA() throws {
        let origin = try TLSTestOrigin(pki: pki)
        defer { origin.stop() }
        try system(bundle: ["root.pem"], directory: ["root.pem"])
        let accepted = try TLSProbe.fetch(host: "127.0.0.1", port: origin.port, serverName: "localhost", caFile: nil)
        XCTAssertEqual(accepted.verification, "ok")
        XCTAssertNil(accepted.verifyCode)

        try FileManager.default.removeItem(atPath: dir + "/certs")
        try system(bundle: ["other-root.pem"], directory: ["other-root.pem"])
        let refused = try TLSProbe.fetch(host: "127.0.0.1", port: origin.port, serverName: "localhost", caFile: nil)
        XCTAssertEqual(refused.verifyCode, 20, refused.verification)
    }
}
