import Airlock
import AirlockConfig
import ArgumentParser
import Foundation

@main
struct AirlockCommand: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "airlock",
        abstract: "An HTTP/1.1 forward proxy and gateway.",
        version: "airlock \(version)",
        subcommands: [RunCommand.self, CheckConfigCommand.self, RejectsCommand.self, PinCommand.self, HealthCommand.self,
                      ReloadCommand.self, CACommand.self, DemoUpstreamCommand.self]
    )
}

/// Writes `text` and a newline to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Prints every issue, one `keyPath: message` line each, to standard error.
func printIssues(_ error: ConfigError) {
    for issue in error.issues {
        printError(issue.description)
    }
}
