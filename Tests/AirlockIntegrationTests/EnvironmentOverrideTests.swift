import AirlockTesting
import Foundation
import XCTest

/// `airlock run` as a container user starts it: settings from AIRLOCK_* variables, a flag
/// still winning over them, and a malformed variable refused at start naming it.
final class EnvironmentOverrideTests: XCTestCase {
    private let yaml = """
        listen: 127.0.0.1:0
        workers: 2
        admin: 127.0.0.1:0
        routes:
          - name: r
            match: { host: "*" }
            upstream: origin
        """

    func testTheEnvironmentOverridesTheFileAndTheRecordSaysSo() throws {
        let port = unusedLoopbackPort()
        let a = try AirlockProcess(executable: AirlockProcess.builtExecutable(), configYAML: yaml,
                                   environment: ["AIRLOCK_LISTEN": "127.0.0.1:\(port)", "AIRLOCK_WORKERS": "1",
                                                 "AIRLOCK_ADMIN": "off"])
        defer { a.stop() }
        XCTAssertEqual(a.port, port, "AIRLOCK_LISTEN beats the file's listen")
        let config = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.config" })
        XCTAssertEqual(config["workers"] as? Int, 1)
        let from = try XCTUnwrap(config["from"] as? [String: String], "\(config)")
        XCTAssertEqual(from["listen"], "AIRLOCK_LISTEN")
        XCTAssertEqual(from["workers"], "AIRLOCK_WORKERS")
        XCTAssertEqual(from["admin"], "AIRLOCK_ADMIN")
        XCTAssertEqual(from["config"], "--config")
        XCTAssertNil(a.logRecords().first { $0["event"] as? String == "airlock.admin" }, "AIRLOCK_ADMIN=off: no admin listener")
    }

    func testAFlagBeatsTheEnvironmentAndTheLogLevelComesFromIt() throws {
        let envPort = unusedLoopbackPort()
        let a = try AirlockProcess(executable: AirlockProcess.builtExecutable(), configYAML: yaml,
                                   extraArgs: ["--listen", "127.0.0.1:0"],
                                   environment: ["AIRLOCK_LISTEN": "127.0.0.1:\(envPort)", "AIRLOCK_LOG_LEVEL": "debug"])
        defer { a.stop() }
        XCTAssertNotEqual(a.port, envPort, "--listen beats AIRLOCK_LISTEN")
        let config = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.config" })
        XCTAssertEqual((config["from"] as? [String: String])?["listen"], "--listen")
        XCTAssertEqual((config["from"] as? [String: String])?["log_level"], "AIRLOCK_LOG_LEVEL")
    }

    func testAMalformedVariableFailsTheStartNamingIt() throws {
        XCTAssertThrowsError(try AirlockProcess(executable: AirlockProcess.builtExecutable(), configYAML: yaml,
                                                startTimeout: 10, environment: ["AIRLOCK_WORKERS": "lots"])) { error in
            XCTAssertTrue("\(error)".contains("AIRLOCK_WORKERS: expected auto or an integer"), "\(error)")
        }
    }
}
