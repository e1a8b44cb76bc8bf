#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Yams

extension AirlockConfig {
    /// Parses and validates a YAML document. Throws `ConfigError` listing every problem.
    public static func load(yaml: String) throws -> AirlockConfig {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "invalid YAML: \(Self.yamlErrorSummary(error))")])
        }
        var reader = ConfigReader()
        let config = reader.readConfig(root)
        var issues = reader.issues
        issues += config.validationIssues(skipping: reader.failedPaths)
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
        return config
    }

    /// Reads and loads a YAML file. An unreadable file is a `ConfigError` too.
    public static func load(file path: String) throws -> AirlockConfig {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "cannot read \(path): \(error.localizedDescription)")])
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(issues: [ConfigError.Issue(keyPath: "", message: "\(path) is not UTF-8 text")])
        }
        return try load(yaml: text)
    }

    /// Yams errors quote the whole document; keep the first line (problem and position).
    private static func yamlErrorSummary(_ error: any Error) -> String {
        if case YamlError.duplicatedKeysInMapping(let duplicates, let context) = error {
            return "duplicate key \(duplicates.map { "\"\($0)\"" }.joined(separator: ", ")) at line \(context.mark.line)"
        }
        let text = String(describing: error)
        return text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? text
    }
}
