import Foundation   // Error.localizedDescription (FoundationEssentials has Data and URL, not that)
import Yams

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
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "invalid YAML: \(Self.yamlErrorSummary(error))")])
        }
        var reader = ConfigReader(environment: environment ?? ProcessInfo.processInfo.environment)
        let config = reader.readConfig(root)
        var issues = reader.issues
        if validating { issues += config.validationIssues(skipping: reader.failedPaths) }
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
        return config
    }

    /// Reads and loads a YAML file. An unreadable file is a `ConfigError` too.
    public static func load(file path: String, environment: [String: String]? = nil) throws -> AirlockConfig {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "cannot read \(path): \(error.localizedDescription)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "\(path) is not UTF-8 text")])
        }
        return try load(yaml: text, environment: environment)
    }

    /// Yams errors quote the document; keep the problem, its position and the context.
    private static func yamlErrorSummary(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return String(describing: error) }
        func describe(_ context: YamlError.Context?, _ problem: String, _ mark: Mark) -> String {
            var text = "line \(mark.line), column \(mark.column): \(problem)"
            if let context { text += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))" }
            if context?.text.contains("alias") == true {
                text += "; a value starting with \"*\" must be quoted, e.g. host: \"*\""
            }
            return text
        }
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            return describe(context, problem, mark)
        case let .duplicatedKeysInMapping(duplicates, context):
            let keys = duplicates.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            return "duplicate key \(keys) in the mapping at line \(context.mark.line)"
        default:
            let text = String(describing: error)
            return text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? text
        }
    }
}
