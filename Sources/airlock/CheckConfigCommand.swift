import Airlock
import AirlockConfig
import ArgumentParser

/// `airlock check-config FILE`: validate and open the files it names, then print the effective config.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a config file and print the effective configuration.",
        discussion: """
            Exits 0 and prints the configuration with every default filled in, \
            or exits 1 and prints each problem as "keyPath: message" on standard error.
            """
    )

    @Argument(help: "The YAML config file (default: AIRLOCK_CONFIG, else the embedded default).")
    var file: String?

    func run() throws {
        do {
            // What `airlock run` would run: the AIRLOCK_* variables apply here too, and the
            // output says where each overridable setting came from.
            var flags = Settings.Flags(config: file)
            flags.configFlag = "FILE"
            let settings = try Settings.load(flags: flags, environment: LocalFile.environment)
            _ = try OpenedConfig(opening: settings.config)
            print(settings.renderYAML(), terminator: "")
        } catch let error as ConfigError {
            printIssues(error)
            throw ExitCode.failure
        }
    }
}
