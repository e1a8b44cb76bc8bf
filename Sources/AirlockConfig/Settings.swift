import AirlockYAML

/// Where an effective setting came from. Precedence, highest first: a command-line flag, an
/// `AIRLOCK_*` environment variable, the config file, the built-in default.
public enum SettingSource: Sendable, Equatable, CustomStringConvertible {
    case flag(String)          // "--listen"
    case environment(String)   // "AIRLOCK_LISTEN"
    case file
    case builtIn

    public var description: String {
        switch self {
        case .flag(let name), .environment(let name): name
        case .file: "the file"
        case .builtIn: "default"
        }
    }
}

/// The settings a container user changes without mounting a file: each has a flag (where
/// `airlock run` has one) and an environment variable.
public struct Settings: Sendable {
    /// The variables read, each with the setting it overrides.
    public static let variables: [(name: String, key: String)] = [
        ("AIRLOCK_CONFIG", "config"), ("AIRLOCK_LISTEN", "listen"), ("AIRLOCK_ADMIN", "admin"),
        ("AIRLOCK_WORKERS", "workers"), ("AIRLOCK_LOG_LEVEL", "log_level"),
    ]
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Command-line values (nil: not given).
    public struct Flags: Sendable {
        public var config: String?
        public var listen: String?
        public var workers: String?
        public var logLevel: String?
        /// How the command names where `config` came from (`check-config` takes it as FILE).
        public var configFlag = "--config"

        public init(config: String? = nil, listen: String? = nil, workers: String? = nil, logLevel: String? = nil) {
            self.config = config
            self.listen = listen
            self.workers = workers
            self.logLevel = logLevel
        }
    }

    /// The configuration with every override applied and validated again.
    public var config: AirlockConfig
    /// The file loaded; nil for the embedded default.
    public var configPath: String?
    public var logLevel: String
    /// Where `config`, `listen`, `admin`, `workers` and `log_level` came from.
    public var sources: [String: SettingSource]

    /// The log level alone (flag > AIRLOCK_LOG_LEVEL > info), known before anything else so
    /// that even a configuration that fails to load is logged at the level asked for. An
    /// unknown value falls back to info here; `load` reports it.
    public static func logLevel(flags: Flags, environment: [String: String]) -> String {
        if let level = flags.logLevel { return level }
        if let level = environment["AIRLOCK_LOG_LEVEL"], logLevels.contains(level) { return level }
        return "info"
    }

    /// Loads the file (flag, else AIRLOCK_CONFIG, else the embedded default), then applies the
    /// overrides in precedence order and validates the result (an override can make a config
    /// unsafe). Every problem is a `ConfigError` issue at its key path, or at the variable's
    /// name when the variable's value is malformed.
    public static func load(flags: Flags, environment: [String: String]) throws -> Settings {
        var sources: [String: SettingSource] = [:]
        var issues: [ConfigError.Issue] = []
        func value(_ flag: String?, _ flagName: String, _ variable: String, key: String) -> String? {
            if let flag {
                sources[key] = .flag(flagName)
                return flag
            }
            if let v = environment[variable], !v.isEmpty {
                sources[key] = .environment(variable)
                return v
            }
            return nil
        }

        let path = value(flags.config, flags.configFlag, "AIRLOCK_CONFIG", key: "config")
        var config = try path.map { try AirlockConfig.load(file: $0, environment: environment) } ?? AirlockConfig.embeddedDefault
        if path == nil { sources["config"] = .builtIn }
        let inFile = path.map(Self.topLevelKeys(ofFile:)) ?? []
        for key in ["listen", "admin", "workers"] { sources[key] = inFile.contains(key) ? .file : .builtIn }

        if let text = value(flags.listen, "--listen", "AIRLOCK_LISTEN", key: "listen") {
            switch ListenAddress.parse(text) {
            case .success(let address): config.listen = address
            case .failure(let error): issues.append(.init(keyPath: sources["listen"]!.description, message: error.message))
            }
        }
        if let text = value(nil, "", "AIRLOCK_ADMIN", key: "admin") {
            if text == "off" {
                config.admin.address = nil
            } else {
                switch ListenAddress.parse(text) {
                case .success(let address): config.admin.address = address
                case .failure(let error):
                    issues.append(.init(keyPath: "AIRLOCK_ADMIN", message: error.message + " (or \"off\")"))
                }
            }
        }
        if let text = value(flags.workers, "--workers", "AIRLOCK_WORKERS", key: "workers") {
            if text == "auto" {
                config.setWorkersAuto()
            } else if let n = Int(text), (1...AirlockConfig.maxWorkers).contains(n) {
                config.workers = n
            } else {
                issues.append(.init(keyPath: sources["workers"]!.description,
                                    message: "expected auto or an integer 1...\(AirlockConfig.maxWorkers), got \"\(text)\""))
            }
        }
        let level = value(flags.logLevel, "--log-level", "AIRLOCK_LOG_LEVEL", key: "log_level") ?? "info"
        if sources["log_level"] == nil { sources["log_level"] = .builtIn }
        if !logLevels.contains(level) {
            issues.append(.init(keyPath: sources["log_level"]!.description,
                                message: "expected one of \(logLevels.joined(separator: ", ")), got \"\(level)\""))
        }
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
        try config.validate()
        return Settings(config: config, configPath: path, logLevel: level, sources: sources)
    }

    /// The keys at the top of a YAML file (empty when it cannot be read: `load` reports that).
    static func topLevelKeys(ofFile path: String) -> Set<String> {
        guard let text = try? LocalFile.readText(path),
              case .mapping(let pairs)? = try? YAMLComposer.compose(yaml: text) else { return [] }
        return Set(pairs.compactMap { $0.key.scalar?.string })
    }

    /// `check-config`'s output: the effective YAML, a `# from` note beside each setting a flag
    /// or an AIRLOCK_* variable set, and at the end where the file and every overridable
    /// setting came from.
    public func renderYAML() -> String {
        var lines: [String] = []
        for line in config.renderYAML().split(separator: "\n", omittingEmptySubsequences: false) {
            let key = ["listen", "admin", "workers"].first { line.hasPrefix("\($0): ") }
            switch key.flatMap({ sources[$0] }) {
            case .flag(let name)?, .environment(let name)?:
                lines.append(line.contains("  # ") ? "\(line); from \(name)" : "\(line)  # from \(name)")
            default:
                lines.append(String(line))
            }
        }
        if lines.last == "" { lines.removeLast() }
        let origin = configPath.map { "\($0) (from \(sources["config"]!))" } ?? "the embedded default"
        lines.append("# config: \(origin)")
        lines.append("# settings: " + ["listen", "admin", "workers", "log_level"].map { key in
            "\(key) from \(sources[key]!)"
        }.joined(separator: ", ") + "; log_level: \(logLevel)")
        return lines.joined(separator: "\n") + "\n"
    }
}
