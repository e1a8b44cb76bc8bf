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

    @Argument(help: "The YAML config file.")
    var file: String

    func run() throws {
        do {
            let opened = try OpenedConfig(opening: AirlockConfig.load(file: file))
            print(opened.config.renderYAML(), terminator: "")
        } catch let error as ConfigError {
            printIssues(error)
            throw ExitCode.failure
        }
    }
}
