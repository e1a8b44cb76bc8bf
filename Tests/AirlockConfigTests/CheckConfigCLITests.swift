import Foundation
import XCTest
@testable import AirlockConfig

/// Runs the built `airlock` executable, which `swift test` builds beside the test bundle.
final class CheckConfigCLITests: XCTestCase {
    private struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `airlock` binary in the build directory that holds this test bundle.
    private func airlockExecutable() throws -> URL {
        var candidates: [URL] = []
        // Linux: the test runner is `<build>/AirlockPackageTests.xctest`; macOS: a bundle in `<build>`.
        candidates.append(Bundle(for: Self.self).bundleURL.deletingLastPathComponent().appendingPathComponent("airlock"))
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("airlock"))
        // `<package>/.build/debug/airlock`, located from this source file.
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/airlock"))
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        return try XCTUnwrap(found, "airlock executable not found in \(candidates.map(\.path))")
    }

    private func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> Outcome {
        let process = Process()
        process.executableURL = try airlockExecutable()
        process.arguments = arguments
        if !extra.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus,
                       stdout: String(decoding: stdout, as: UTF8.self),
                       stderr: String(decoding: stderr, as: UTF8.self))
    }

    private func temporaryFile(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-\(UUID().uuidString).yaml").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testCheckConfigPrintsEffectiveConfigForAGoodFile() throws {
        let outcome = try run(["check-config", try temporaryFile(fullExampleYAML)])
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        XCTAssertEqual(outcome.stderr, "")
        XCTAssertEqual(try AirlockConfig.load(yaml: outcome.stdout), try AirlockConfig.load(yaml: fullExampleYAML))
        XCTAssertTrue(outcome.stdout.hasPrefix("listen: 127.0.0.1:8080\n"), outcome.stdout)
    }

    /// "Every default filled in": `workers: auto` shows the setting and what it resolves to on
    /// this machine, and every route that can reach a TLS upstream shows its `security`, default
    /// `min_security_level` included; the output loads back to the same configuration.
    func testCheckConfigShowsWorkersAutoAndTheDefaultSecurityLevel() throws {
        let yaml = """
            listen: 127.0.0.1:8080
            workers: auto
            routes:
              - name: api
                match: { host: api.test }
                upstream: https://api.test
              - name: rest
                match: { host: "*" }
                upstream: origin
            """
        let outcome = try run(["check-config", try temporaryFile(yaml)])
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let lines = outcome.stdout.split(separator: "\n").map(String.init)
        let workers = try XCTUnwrap(lines.first { $0.hasPrefix("workers:") }, outcome.stdout)
        XCTAssertTrue(workers.hasPrefix("workers: auto "), workers)
        XCTAssertTrue(workers.contains("resolves to \(AirlockConfig.autoWorkers)"), workers)
        XCTAssertEqual(lines.filter { $0 == "      min_security_level: 2" }.count, 2, outcome.stdout)
        XCTAssertEqual(try AirlockConfig.load(yaml: outcome.stdout), try AirlockConfig.load(yaml: yaml))
        // A number stays a number.
        let fixed = try run(["check-config", try temporaryFile(yaml.replacingOccurrences(of: "workers: auto", with: "workers: 3"))])
        XCTAssertTrue(fixed.stdout.contains("\nworkers: 3\n"), fixed.stdout)
    }

    func testCheckConfigListsEveryIssueForABadFile() throws {
        let outcome = try run(["check-config", try temporaryFile("""
            listen: 0.0.0.0:8080
            workers: 999
            routes:
              - name: default
                match: { host: "*" }
                upstream: origin
              - name: api
                match: { host: api.test }
                upstream: http://user@api.test/path
            """)])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertEqual(outcome.stdout, "")
        let lines = outcome.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, outcome.stderr)
        for keyPath in ["workers: ", "routes[0].match.host: ", "routes[1].upstream: "] {
            XCTAssertTrue(lines.contains { $0.hasPrefix(keyPath) }, "no \(keyPath) in\n\(outcome.stderr)")
        }
        XCTAssertFalse(outcome.stderr.contains("Fatal error"))
    }

    func testCheckConfigNeverPrintsRequestSecrets() throws {
        let route = """
            routes:
              - name: api
                match: { host: api.test }
                upstream: http://127.0.0.1:9000
                request:
                  headers: { X-Public: shown-value, X-Key: { secret: header-secret-value } }
                  override_headers: { X-Other: { secret: override-secret-value } }

            """
        let basic = try run(["check-config", try temporaryFile(route + """
                  authorization: { basic: { username: basic-user-value, password: basic-password-value } }
            """)])
        let bearer = try run(["check-config", try temporaryFile(route + """
                  authorization: { bearer_env: AIRLOCK_TEST_BEARER }
            """)], environment: ["AIRLOCK_TEST_BEARER": "bearer-token-value"])
        for outcome in [basic, bearer] {
            XCTAssertEqual(outcome.status, 0, outcome.stderr)
            XCTAssertTrue(outcome.stdout.contains("shown-value"), outcome.stdout)
            XCTAssertTrue(outcome.stdout.contains("# authorization: set (not shown)"), outcome.stdout)
            for secret in ["header-secret-value", "override-secret-value", "basic-user-value", "basic-password-value",
                           "bearer-token-value"] {
                XCTAssertFalse(outcome.stdout.contains(secret) || outcome.stderr.contains(secret), "\(secret) printed")
            }
        }
        let unset = try run(["check-config", try temporaryFile(route + """
                  authorization: { bearer_env: AIRLOCK_TEST_UNSET_VARIABLE }
            """)])
        XCTAssertEqual(unset.status, 1)
        XCTAssertTrue(unset.stderr.hasPrefix("routes[0].request.authorization.bearer_env: "), unset.stderr)
    }

    func testCheckConfigMissingFileExitsOne() throws {
        let outcome = try run(["check-config", "/nonexistent/airlock.yaml"])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.contains("/nonexistent/airlock.yaml"), outcome.stderr)
    }

    func testVersion() throws {
        let outcome = try run(["--version"])
        XCTAssertEqual(outcome.status, 0)
        XCTAssertEqual(outcome.stdout, "airlock 0.1.0\n")
    }

    func testRunRefusesAnOverrideThatOpensTheProxy() throws {
        let outcome = try run(["run", "--listen", "0.0.0.0:0"])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertTrue(outcome.stderr.hasPrefix("routes[0].match.host: "), outcome.stderr)
        // Config errors go to stderr, and to stdout as one airlock.failed record (the JSON log).
        let lines = outcome.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, outcome.stdout)
        let record = lines.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]
        XCTAssertEqual(record?["event"] as? String, "airlock.failed", outcome.stdout)
        let issues = record?["issues"] as? [[String: Any]]
        XCTAssertEqual(issues?.compactMap { $0["key_path"] as? String }, ["routes[0].match.host"], outcome.stdout)
    }

    func testRunReportsConfigErrorsWithoutAStackTrace() throws {
        let outcome = try run(["run", "--config", try temporaryFile("routes: []\n")])
        XCTAssertEqual(outcome.status, 1)
        XCTAssertEqual(outcome.stderr, "routes: at least one route is required\n")
    }
}
