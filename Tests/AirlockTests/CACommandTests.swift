import AirlockConfig
import AirlockIO
import AirlockTesting
import Foundation
import XCTest
@testable import Airlock

/// `airlock ca init|show` run as the built executable, and the `ca:` block of the
/// configuration (the loader and `airlock check-config`).
final class CACommandTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-ca-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The `airlock` binary beside this test bundle (or in `.build/debug`).
    private func airlock(_ arguments: [String]) throws -> ProcessResult {
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidates = [
            Bundle(for: Self.self).bundleURL.deletingLastPathComponent().appendingPathComponent("airlock").path,
            Bundle.main.bundleURL.appendingPathComponent("airlock").path,
            packageRoot.appendingPathComponent(".build/debug/airlock").path,
        ]
        let found = try XCTUnwrap(candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
                                  "airlock executable not found in \(candidates)")
        return try runProcess(found, arguments, timeout: 30)
    }

    private func mode(_ path: String) -> mode_t {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0
    }

    private func read(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    }

    func testInitWritesAPrivateKeyAndRefusesToOverwriteWithoutForce() throws {
        let certs = dir + "/certs"
        let first = try airlock(["ca", "init", "--dir", certs])
        XCTAssertEqual(first.exitCode, 0, first.stderr)
        let cert = certs + "/airlock-ca.pem", key = certs + "/airlock-ca.key"
        XCTAssertEqual(mode(key), 0o600)
        XCTAssertTrue(try read(cert).hasPrefix("-----BEGIN CERTIFICATE-----"))
        XCTAssertTrue(try read(key).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let original = try read(cert)

        let second = try airlock(["ca", "init", "--dir", certs])
        XCTAssertEqual(second.exitCode, 1)
        XCTAssertTrue(second.stderr.contains("exists") && second.stderr.contains("--force"), second.stderr)
        XCTAssertEqual(try read(cert), original, "nothing was overwritten")

        let forced = try airlock(["ca", "init", "--dir", certs, "--force"])
        XCTAssertEqual(forced.exitCode, 0, forced.stderr)
        XCTAssertNotEqual(try read(cert), original)
        XCTAssertEqual(mode(key), 0o600)
    }

    func testShowPrintsTheFingerprintOpenSSLPrints() throws {
        try Requirement.tool("/usr/bin/openssl")
        let certs = dir + "/certs"
        XCTAssertEqual(try airlock(["ca", "init", "--dir", certs]).exitCode, 0)
        let show = try airlock(["ca", "show", "--dir", certs])
        XCTAssertEqual(show.exitCode, 0, show.stderr)
        let printed = try runProcess("/usr/bin/openssl", ["x509", "-in", certs + "/airlock-ca.pem", "-noout", "-fingerprint", "-sha256"])
        let fingerprint = try XCTUnwrap(printed.stdoutString.split(separator: "=", maxSplits: 1).last)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(fingerprint.count, 95, printed.stdoutString)
        XCTAssertTrue(show.stdoutString.contains("sha256 fingerprint: \(fingerprint)\n"), show.stdoutString)
        XCTAssertTrue(show.stdoutString.contains("certificate for clients to trust: \(certs)/airlock-ca.pem"), show.stdoutString)
        XCTAssertTrue(show.stdoutString.contains("subject: CN=Airlock Local CA"), show.stdoutString)
        XCTAssertTrue(show.stdoutString.contains("expires: "), show.stdoutString)
    }

    // MARK: config

    private func config(certificate: String, key: String, extra: String = "") -> String {
        """
        routes:
          - name: default
            match: { host: "*" }
            upstream: origin
        ca:
          certificate: \(certificate)
          key: \(key)
        \(extra)
        """
    }

    func testConfigLoadsTheCAAndRendersIt() throws {
        let certs = dir + "/certs"
        XCTAssertEqual(try airlock(["ca", "init", "--dir", certs]).exitCode, 0)
        let yaml = config(certificate: certs + "/airlock-ca.pem", key: certs + "/airlock-ca.key", extra: "  leaf_cache_size: 5")
        let loaded = try AirlockConfig.load(yaml: yaml)
        XCTAssertEqual(try XCTUnwrap(loaded.ca).leafCacheSize, 5)
        let ca = try XCTUnwrap(OpenedConfig(opening: loaded).ca)
        XCTAssertTrue(ca.authority.subject.hasPrefix("CN=Airlock Local CA"))
        XCTAssertEqual(try ca.serverContext.leaf(for: "example.test").name, "example.test")
        XCTAssertEqual(try AirlockConfig.load(yaml: loaded.renderYAML()), loaded, loaded.renderYAML())
        XCTAssertTrue(loaded.renderYAML().contains("ca:\n  certificate: "), loaded.renderYAML())
        XCTAssertNil(try AirlockConfig.load(yaml: "routes: [{ name: d, match: { host: \"*\" }, upstream: origin }]").ca)
    }

    func testCheckConfigRefusesAKeyReadableByOthersNamingIt() throws {
        let certs = dir + "/certs"
        XCTAssertEqual(try airlock(["ca", "init", "--dir", certs]).exitCode, 0)
        let key = certs + "/airlock-ca.key"
        XCTAssertEqual(chmod(key, 0o644), 0)
        let file = dir + "/airlock.yaml"
        try Data(config(certificate: certs + "/airlock-ca.pem", key: key).utf8).write(to: URL(fileURLWithPath: file))
        let r = try airlock(["check-config", file])
        XCTAssertEqual(r.exitCode, 1, r.stdoutString)
        XCTAssertEqual(r.stdoutString, "")
        XCTAssertTrue(r.stderr.hasPrefix("ca.key: \(key) has mode 0644"), r.stderr)
        XCTAssertEqual(chmod(key, 0o600), 0)
        XCTAssertEqual(try airlock(["check-config", file]).exitCode, 0)
    }

    func testConfigErrorsNameTheCAKeys() throws {
        let certs = dir + "/certs"
        XCTAssertEqual(try airlock(["ca", "init", "--dir", certs]).exitCode, 0)
        let other = dir + "/other"
        XCTAssertEqual(try airlock(["ca", "init", "--dir", other]).exitCode, 0)
        func issues(_ yaml: String) -> [String] {
            do {
                _ = try OpenedConfig(opening: AirlockConfig.load(yaml: yaml))
                return []
            } catch let e as ConfigError {
                return e.issues.map(\.description)
            } catch {
                return ["\(error)"]
            }
        }
        let mismatch = issues(config(certificate: certs + "/airlock-ca.pem", key: other + "/airlock-ca.key"))
        XCTAssertEqual(mismatch.count, 1, "\(mismatch)")
        XCTAssertTrue(mismatch.first?.hasPrefix("ca.key: the key in \(other)/airlock-ca.key does not match") == true, "\(mismatch)")
        let missing = issues(config(certificate: dir + "/none.pem", key: certs + "/airlock-ca.key"))
        XCTAssertTrue(missing.first?.hasPrefix("ca.certificate: cannot read \(dir)/none.pem") == true, "\(missing)")
        let size = issues(config(certificate: certs + "/airlock-ca.pem", key: certs + "/airlock-ca.key", extra: "  leaf_cache_size: 0"))
        XCTAssertTrue(size.first?.hasPrefix("ca.leaf_cache_size: ") == true, "\(size)")
        let noKey = issues("routes: [{ name: d, match: { host: \"*\" }, upstream: origin }]\nca: { certificate: x.pem }")
        XCTAssertTrue(noKey.first?.hasPrefix("ca.key: required") == true, "\(noKey)")
    }
}
