/// One node of a composed YAML document: what the config reader walks.
///
/// Aliases are resolved while composing (an alias is the node its anchor named), so the tree
/// has scalars, mappings (pairs in document order, duplicates refused) and sequences only.
public indirect enum Node: Sendable {
    case scalar(Scalar)
    case mapping([(key: Node, value: Node)])
    case sequence([Node])

    /// The scalar, if this is one.
    public var scalar: Scalar? {
        if case .scalar(let scalar) = self { return scalar }
        return nil
    }

    /// YAML's null: a plain scalar `""`, `~`, `null`, `Null` or `NULL` (a key with no value
    /// reads as `""`). Quoted `"null"` or `''` is text, not null.
    public var isNull: Bool {
        guard case .scalar(let scalar) = self, scalar.style == .plain else { return false }
        switch scalar.string {
        case "", "~", "null", "Null", "NULL": return true
        default: return false
        }
    }

    /// Where the node starts in the document (a collection: its first item's position).
    var mark: Mark {
        switch self {
        case .scalar(let scalar): scalar.mark
        case .mapping(let pairs): pairs.first?.key.mark ?? Mark(line: 1, column: 1)
        case .sequence(let items): items.first?.mark ?? Mark(line: 1, column: 1)
        }
    }
}

/// A scalar as written: its text, how it was quoted and its explicit tag, so that `off` and
/// `"off"`, `1` and `'1'` stay apart for whoever reads them.
public struct Scalar: Sendable, Equatable {
    public enum Style: Sendable, Equatable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    public var string: String
    public var style: Style
    /// The explicit tag (`!!str x`: `tag:yaml.org,2002:str`); nil when none was written.
    public var tag: String?
    public var mark: Mark

    public init(_ string: String, style: Style = .plain, tag: String? = nil, mark: Mark = Mark(line: 1, column: 1)) {
        self.string = string
        self.style = style
        self.tag = tag
        self.mark = mark
    }

    /// The tag YAML 1.1's resolver gives the scalar, near enough for telling keys apart
    /// (`null`, `bool`, decimal `int` and `float`, else `str` for a plain one without a tag;
    /// `str` for a quoted one; not hex, octal or sexagesimal numbers): two mapping keys are the
    /// same key when text and resolved tag are equal, as `"a"` and `a` are and `1` and `'1'` are not.
    public var resolvedTag: String {
        if let tag, tag != "!" { return tag }
        guard style == .plain, tag == nil else { return Self.strTag }
        if Node.scalar(self).isNull { return "tag:yaml.org,2002:null" }
        switch string {
        case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
             "true", "True", "TRUE", "false", "False", "FALSE",
             "on", "On", "ON", "off", "Off", "OFF":
            return "tag:yaml.org,2002:bool"
        default:
            break
        }
        if Int(string) != nil { return "tag:yaml.org,2002:int" }
        if Double(string) != nil { return "tag:yaml.org,2002:float" }
        return Self.strTag
    }

    static let strTag = "tag:yaml.org,2002:str"
}

/// A position in the document, 1-based like an editor's.
public struct Mark: Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "line \(line), column \(column)" }
}
