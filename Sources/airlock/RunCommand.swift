import Airlock
import AirlockConfig
import ArgumentParser
import Logging

/// `airlock run`: load the config, start the gateway, block until drained.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the proxy until SIGTERM or SIGINT, then drain and exit."
    )

    @Option(name: .long, help: "YAML config file. Without it, a loopback-only forward proxy on 127.0.0.1:8080.")
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Listen address, overriding the config.", valueName: "host:port"))
    var listen: String?

    @Option(name: .long, help: ArgumentHelp("Event loops (1...256 or auto), overriding the config.", valueName: "n"))
    var workers: String?

    @Option(name: .long, help: "Log level.")
    var logLevel: LogLevelOption = .info

    mutating func validate() throws {
        if let listen, ListenAddress(listen) == nil {
            if case .failure(let error) = ListenAddress.parse(listen) {
                throw ValidationError("--listen: \(error.issues.map(\.message).joined(separator: "; "))")
            }
        }
        if let workers, workers != "auto", Int(workers).map({ (1...256).contains($0) }) != true {
            throw ValidationError("--workers: expected auto or an integer 1...256, got \"\(workers)\"")
        }
    }

    func run() throws {
        AirlockLogging.bootstrap(level: logLevel.level)
        let logger = Logger(label: "airlock")
        let opened: OpenedConfig
        do {
            opened = try OpenedConfig(opening: loadConfig())
        } catch let error as ConfigError {
            AirlockLogging.logStartFailure(error, to: logger)
            printIssues(error)
            throw ExitCode.failure
        }
        let effective = opened.config

        logger.info("airlock.config", metadata: [
            "source": .string(config ?? "embedded default"),
            "listen": .string(effective.listen.description),
            "workers": .stringConvertible(effective.workers),
            "routes": .stringConvertible(effective.routes.count),
        ])
        if effective.allowOpenProxy && !effective.listen.isLoopback {
            logger.warning("airlock.open-proxy", metadata: ["listen": .string(effective.listen.description)])
        }

        do {
            let gateway = try Gateway(config: opened, logger: logger)
            try gateway.run()
        } catch {
            AirlockLogging.logStartFailure(error, to: logger)
            printError("airlock: \(error)")
            throw ExitCode.failure
        }
    }

    /// The file or the embedded default, with command-line overrides applied
    /// and validated again (an override can make a config unsafe). `run()` then opens the files
    /// it names (`OpenedConfig`).
    private func loadConfig() throws -> AirlockConfig {
        var loaded = try config.map { try AirlockConfig.load(file: $0) } ?? AirlockConfig.embeddedDefault
        if let listen, let address = ListenAddress(listen) {
            loaded.listen = address
        }
        if let workers {
            if workers == "auto" {
                loaded.setWorkersAuto()
            } else {
                loaded.workers = Int(workers) ?? loaded.workers
            }
        }
        try loaded.validate()
        return loaded
    }
}

/// `--log-level`, spelled as swift-log spells its levels.
enum LogLevelOption: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level {
        Logger.Level(rawValue: rawValue) ?? .info
    }
}
