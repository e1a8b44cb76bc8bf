/// Everything wrong with a configuration, each problem at its key path.
///
/// Loading never stops at the first problem: a file with three typos reports
/// three issues, so the operator fixes them in one pass.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public struct Issue: Sendable, Equatable, CustomStringConvertible {
        /// Where the problem is, e.g. `routes[1].upstream` or `limits.header_timeout`.
        /// Empty for problems with the document as a whole (unreadable file, YAML syntax).
        public var keyPath: String
        public var message: String

        public init(keyPath: String, message: String) {
            self.keyPath = keyPath
            self.message = message
        }

        /// `"routes[1].upstream: ..."`, or just the message when there is no key path.
        public var description: String {
            keyPath.isEmpty ? message : "\(keyPath): \(message)"
        }
    }

    public var issues: [Issue]

    public init(issues: [Issue]) {
        self.issues = issues
    }

    /// A single issue.
    public init(keyPath: String, message: String) {
        self.issues = [Issue(keyPath: keyPath, message: message)]
    }

    /// The messages alone, joined; for single-value parsers whose caller supplies the key path.
    var message: String {
        issues.map(\.message).joined(separator: "; ")
    }

    /// One line per issue.
    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}
