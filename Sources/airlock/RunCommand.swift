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

    @Option(name: .long, help: "Log level (default info, or AIRLOCK_LOG_LEVEL).")
    var logLevel: LogLevelOption?

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
        // Precedence: flag > AIRLOCK_* environment variable > the file > the default.
        let environment = LocalFile.environment
        let flags = Settings.Flags(config: config, listen: listen, workers: workers, logLevel: logLevel?.rawValue)
        let level = Settings.logLevel(flags: flags, environment: environment)
        AirlockLogging.bootstrap(level: Logger.Level(rawValue: level) ?? .info)
        let logger = Logger(label: "airlock")
        let settings: Settings
        let opened: OpenedConfig
        do {
            settings = try Settings.load(flags: flags, environment: environment)
            opened = try OpenedConfig(opening: settings.config)
        } catch let error as ConfigError {
            AirlockLogging.logStartFailure(error, to: logger)
            printIssues(error)
            throw ExitCode.failure
        }
        let effective = opened.config

        logger.info("airlock.config", metadata: [
            "source": .string(settings.configPath ?? "embedded default"),
            "listen": .string(effective.listen.description),
            "workers": .stringConvertible(effective.workers),
            "routes": .stringConvertible(effective.routes.count),
            "from": .dictionary(settings.sources.mapValues { .string($0.description) }),
        ])
        if effective.allowOpenProxy && !effective.listen.isLoopback {
            logger.warning("airlock.open-proxy", metadata: ["listen": .string(effective.listen.description)])
        }

        do {
            let gateway = try Gateway(config: opened, logger: logger)
            // SIGHUP and POST /reload read the same file and environment again, with the same flags.
            gateway.reloadSource = {
                try OpenedConfig(opening: Settings.load(flags: flags, environment: LocalFile.environment).config)
            }
            try gateway.run()
        } catch {
            AirlockLogging.logStartFailure(error, to: logger)
            printError("airlock: \(error)")
            throw ExitCode.failure
        }
    }
}

/// `--log-level`, spelled as swift-log spells its levels.
enum LogLevelOption: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level {
        Logger.Level(rawValue: rawValue) ?? .info
    }
}
