import Airlock
import AirlockConfig
import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

/// Writes `text` and a newline to standard error (unbuffered: write(2) until all of it is out).
func printError(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 {
            offset += n
        } else if errno != EINTR {
            return
        }
    }
}

/// Prints every issue, one `keyPath: message` line each, to standard error.
func printIssues(_ error: ConfigError) {
    for issue in error.issues {
        printError(issue.description)
    }
}
