/// Why a document could not be composed: libyaml's reader, scanner or parser error with its
/// position and context, or a composer error (an undefined alias, a second document,
/// duplicate keys in one mapping).
public struct YAMLError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case reader, scanner, parser, composer, duplicateKeys, memory
    }

    public var kind: Kind
    /// libyaml's problem, e.g. "found character that cannot start any token".
    public var problem: String
    public var mark: Mark
    /// What libyaml was reading when it failed, e.g. "while parsing a flow mapping" at its start.
    public var context: (text: String, mark: Mark)?
    /// For `.duplicateKeys`: the repeated keys, sorted.
    public var duplicateKeys: [String] = []

    public init(kind: Kind, problem: String, mark: Mark, context: (text: String, mark: Mark)? = nil, duplicateKeys: [String] = []) {
        self.kind = kind
        self.problem = problem
        self.mark = mark
        self.context = context
        self.duplicateKeys = duplicateKeys
    }

    /// `line 3, column 19: found character that cannot start any token (while scanning an
    /// alias at line 3, column 18)`; `duplicate key "workers" in the mapping at line 1`.
    public var description: String {
        switch kind {
        case .duplicateKeys:
            let keys = duplicateKeys.map { "\"\($0)\"" }.joined(separator: ", ")
            return "duplicate key \(keys) in the mapping at line \(mark.line)"
        case .memory:
            return "out of memory"
        default:
            var text = "\(mark): \(problem)"
            if let context { text += " (\(context.text) at \(context.mark))" }
            return text
        }
    }
}
