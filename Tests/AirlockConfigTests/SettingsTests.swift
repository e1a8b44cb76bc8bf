import Foundation
import XCTest
@testable import AirlockConfig

/// The settings a container user overrides without a file: flag > AIRLOCK_* variable > the
/// file > the default, each source named, malformed values refused naming the variable.
final class SettingsTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "airlock-settings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func file(_ yaml: String) throws -> String {
        let path = directory + "/airlock-\(UUID().uuidString).yaml"
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private let routes = """
        routes:
          - name: r
            match: { host: "*" }
            upstream: origin
        """

    func testPrecedenceIsFlagThenEnvironmentThenFileThenDefault() throws {
        let path = try file("listen: 127.0.0.1:9001\nworkers: 2\nadmin: 127.0.0.1:9101\n" + routes)
        let fileOnly = try Settings.load(flags: .init(config: path), environment: [:])
        XCTAssertEqual(fileOnly.config.listen.description, "127.0.0.1:9001")
        XCTAssertEqual(fileOnly.config.workers, 2)
        XCTAssertEqual(fileOnly.config.admin.address?.description, "127.0.0.1:9101")
        XCTAssertEqual(fileOnly.sources["listen"], .file)
        XCTAssertEqual(fileOnly.sources["config"], .flag("--config"))
        XCTAssertEqual(fileOnly.logLevel, "info")
        XCTAssertEqual(fileOnly.sources["log_level"], .builtIn)

        let env = ["AIRLOCK_LISTEN": "127.0.0.1:9002", "AIRLOCK_WORKERS": "3", "AIRLOCK_ADMIN": "off",
                   "AIRLOCK_LOG_LEVEL": "warning"]
        let fromEnv = try Settings.load(flags: .init(config: path), environment: env)
        XCTAssertEqual(fromEnv.config.listen.description, "127.0.0.1:9002")
        XCTAssertEqual(fromEnv.config.workers, 3)
        XCTAssertNil(fromEnv.config.admin.address, "AIRLOCK_ADMIN=off turns the admin listener off")
        XCTAssertEqual(fromEnv.logLevel, "warning")
        XCTAssertEqual(fromEnv.sources["listen"], .environment("AIRLOCK_LISTEN"))
        XCTAssertEqual(fromEnv.sources["admin"], .environment("AIRLOCK_ADMIN"))
        XCTAssertEqual(fromEnv.sources["workers"], .environment("AIRLOCK_WORKERS"))
        XCTAssertEqual(fromEnv.sources["log_level"], .environment("AIRLOCK_LOG_LEVEL"))

        let fromFlags = try Settings.load(flags: .init(config: path, listen: "127.0.0.1:9003", workers: "auto",
                                                       logLevel: "debug"), environment: env)
        XCTAssertEqual(fromFlags.config.listen.description, "127.0.0.1:9003")
        XCTAssertEqual(fromFlags.config.workersSetting, .auto)
        XCTAssertEqual(fromFlags.logLevel, "debug")
        XCTAssertEqual(fromFlags.sources["listen"], .flag("--listen"))
        XCTAssertEqual(fromFlags.sources["workers"], .flag("--workers"))
        XCTAssertEqual(fromFlags.sources["admin"], .environment("AIRLOCK_ADMIN"), "admin has no flag")
        XCTAssertEqual(Settings.logLevel(flags: .init(logLevel: "debug"), environment: env), "debug")
        XCTAssertEqual(Settings.logLevel(flags: .init(), environment: env), "warning")
    }

    func testTheConfigFileComesFromTheFlagThenAIRLOCK_CONFIGThenTheEmbeddedDefault() throws {
        let a = try file("listen: 127.0.0.1:9011\n" + routes)
        let b = try file("listen: 127.0.0.1:9012\n" + routes)
        XCTAssertEqual(try Settings.load(flags: .init(), environment: ["AIRLOCK_CONFIG": b]).config.listen.port, 9012)
        XCTAssertEqual(try Settings.load(flags: .init(config: a), environment: ["AIRLOCK_CONFIG": b]).config.listen.port, 9011)
        let builtIn = try Settings.load(flags: .init(), environment: [:])
        XCTAssertEqual(builtIn.config, AirlockConfig.embeddedDefault)
        XCTAssertNil(builtIn.configPath)
        XCTAssertEqual(builtIn.sources["config"], .builtIn)
        XCTAssertEqual(builtIn.sources["listen"], .builtIn)
        XCTAssertEqual(try Settings.load(flags: .init(), environment: ["AIRLOCK_CONFIG": ""]).configPath, nil,
                       "an empty variable is unset")
    }

    func testMalformedValuesAreRefusedNamingTheVariable() throws {
        let cases: [([String: String], String)] = [
            (["AIRLOCK_LISTEN": "nowhere"], "AIRLOCK_LISTEN"), (["AIRLOCK_ADMIN": "9090"], "AIRLOCK_ADMIN"),
            (["AIRLOCK_WORKERS": "0"], "AIRLOCK_WORKERS"), (["AIRLOCK_WORKERS": "many"], "AIRLOCK_WORKERS"),
            (["AIRLOCK_LOG_LEVEL": "loud"], "AIRLOCK_LOG_LEVEL"),
        ]
        for (env, key) in cases {
            XCTAssertThrowsError(try Settings.load(flags: .init(), environment: env), key) { error in
                XCTAssertEqual((error as? ConfigError)?.issues.map(\.keyPath), [key], "\(error)")
            }
        }
        XCTAssertThrowsError(try Settings.load(flags: .init(workers: "0"), environment: [:])) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.map(\.keyPath), ["--workers"])
        }
        // An override that makes the configuration unsafe is refused like the file would be.
        XCTAssertThrowsError(try Settings.load(flags: .init(), environment: ["AIRLOCK_LISTEN": "0.0.0.0:8080"])) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.first?.keyPath, "routes[0].match.host", "\(error)")
        }
        XCTAssertThrowsError(try Settings.load(flags: .init(), environment: ["AIRLOCK_ADMIN": "0.0.0.0:9090"])) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.first?.keyPath, "admin", "\(error)")
        }
    }

    func testTheRenderingSaysWhereEachOverridableSettingCameFrom() throws {
        let path = try file("listen: 127.0.0.1:9021\n" + routes)
        let s = try Settings.load(flags: .init(config: path, workers: "auto"),
                                  environment: ["AIRLOCK_ADMIN": "127.0.0.1:9121", "AIRLOCK_LOG_LEVEL": "error"])
        let text = s.renderYAML()
        for line in ["# config: \(path) (from --config)",
                     "# settings: listen from the file, admin from AIRLOCK_ADMIN, workers from --workers, "
                        + "log_level from AIRLOCK_LOG_LEVEL; log_level: error",
                     "listen: 127.0.0.1:9021",
                     "workers: auto  # resolves to \(AirlockConfig.autoWorkers) on this machine; from --workers",
                     "admin: 127.0.0.1:9121  # from AIRLOCK_ADMIN"] {
            XCTAssertTrue(text.contains(line + "\n"), "missing \(line) in\n\(text)")
        }
        XCTAssertEqual(try AirlockConfig.load(yaml: text), s.config, "the annotated output still loads back equal")
    }
}
