import AirlockYAML

extension AirlockConfig {
    /// Parses and validates a YAML document. Throws `ConfigError` listing every problem.
    /// `environment` supplies the variables `bearer_env` names (nil: the process's).
    public static func load(yaml: String, environment: [String: String]? = nil) throws -> AirlockConfig {
        try read(yaml: yaml, environment: environment, validating: true)
    }

    /// Parses a YAML document; `validating: false` skips the cross-field and range checks
    /// (`validationIssues`) and reports the reader's problems only (tests of the reader).
    static func read(yaml: String, environment: [String: String]? = nil, validating: Bool) throws -> AirlockConfig {
        let root: Node?
        do {
            root = try YAMLComposer.compose(yaml: yaml)
        } catch {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "invalid YAML: \(Self.yamlErrorSummary(error))")])
        }
        var reader = ConfigReader(environment: environment ?? LocalFile.environment)
        let config = reader.readConfig(root)
        var issues = reader.issues
        if validating { issues += config.validationIssues(skipping: reader.failedPaths) }
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
        return config
    }

    /// Reads and loads a YAML file. An unreadable file is a `ConfigError` too.
    public static func load(file path: String, environment: [String: String]? = nil) throws -> AirlockConfig {
        let text: String?
        do {
            text = try LocalFile.readText(path)
        } catch {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "cannot read \(path): \(error)")])
        }
        guard let text else {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "\(path) is not UTF-8 text")])
        }
        return try load(yaml: text, environment: environment)
    }

    /// libyaml's problem, its position and the context; a hint for the unquoted `*`.
    private static func yamlErrorSummary(_ error: YAMLError) -> String {
        var text = error.description
        if error.context?.text.contains("alias") == true {
            text += "; a value starting with \"*\" must be quoted, e.g. host: \"*\""
        }
        return text
    }
}
