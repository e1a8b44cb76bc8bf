import CLibYAML

/// Composes a YAML document into `Node`s with Debian's libyaml: the only file that imports
/// the C library, and where its errors become `YAMLError`s.
public enum YAMLComposer {
    /// The document's root; nil for a stream with no document (empty, or comments only).
    /// Throws for a syntax error, an undefined alias, a second document or duplicate keys.
    public static func compose(yaml: String) throws(YAMLError) -> Node? {
        // libyaml reads the bytes in place (and wants a non-null pointer even for none).
        var bytes = Array(yaml.utf8)
        let count = bytes.count
        bytes.append(0)
        return try bytes.withUnsafeBufferPointer { (buffer) throws(YAMLError) -> Node? in
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else {
                throw YAMLError(kind: .memory, problem: "out of memory", mark: Mark(line: 1, column: 1))
            }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(&parser, buffer.baseAddress, count)
            return try withUnsafeMutablePointer(to: &parser) { (pointer) throws(YAMLError) -> Node? in
                var events = EventReader(parser: pointer, bytes: UnsafeBufferPointer(rebasing: buffer[0..<count]))
                return try events.singleDocument()
            }
        }
    }
}

/// Walks libyaml's events depth-first into nodes; every event it takes, it deletes.
private struct EventReader {
    let parser: UnsafeMutablePointer<yaml_parser_t>
    let bytes: UnsafeBufferPointer<UInt8>
    var anchors: [String: Node] = [:]

    mutating func singleDocument() throws(YAMLError) -> Node? {
        var event = try next()   // stream start
        yaml_event_delete(&event)
        event = try next()
        if event.type == YAML_STREAM_END_EVENT {
            yaml_event_delete(&event)
            return nil
        }
        yaml_event_delete(&event)   // document start
        event = try next()
        let root = try node(from: &event)
        event = try next()          // document end
        yaml_event_delete(&event)
        event = try next()
        defer { yaml_event_delete(&event) }
        guard event.type == YAML_STREAM_END_EVENT else {
            throw YAMLError(kind: .composer, problem: "but found another document", mark: Self.mark(event.start_mark),
                            context: ("expected a single document in the stream", Mark(line: 1, column: 1)))
        }
        return root
    }

    /// The node `event` starts (and everything up to its end), deleting `event`.
    mutating func node(from event: inout yaml_event_t) throws(YAMLError) -> Node {
        defer { yaml_event_delete(&event) }
        let start = Self.mark(event.start_mark)
        switch event.type {
        case YAML_ALIAS_EVENT:
            let name = String(cString: event.data.alias.anchor)
            guard let node = anchors[name] else {
                throw YAMLError(kind: .composer, problem: "found undefined alias", mark: start)
            }
            return node
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            let node = Node.scalar(Scalar(text, style: Self.style(scalar.style), tag: Self.string(scalar.tag), mark: start))
            register(scalar.anchor, node)
            return node
        case YAML_SEQUENCE_START_EVENT:
            var items: [Node] = []
            var item = try next()
            while item.type != YAML_SEQUENCE_END_EVENT {
                items.append(try node(from: &item))
                item = try next()
            }
            yaml_event_delete(&item)
            let node = Node.sequence(items)
            register(event.data.sequence_start.anchor, node)
            return node
        case YAML_MAPPING_START_EVENT:
            var pairs: [(key: Node, value: Node)] = []
            var item = try next()
            while item.type != YAML_MAPPING_END_EVENT {
                let key = try node(from: &item)
                item = try next()
                let value = try node(from: &item)
                pairs.append((key, value))
                item = try next()
            }
            yaml_event_delete(&item)
            try Self.refuseDuplicateKeys(pairs)
            let node = Node.mapping(pairs)
            register(event.data.mapping_start.anchor, node)
            return node
        default:
            throw YAMLError(kind: .composer, problem: "unexpected event \(event.type.rawValue)", mark: start)
        }
    }

    /// The next event; the caller deletes it (or hands it to `node(from:)`, which does).
    mutating func next() throws(YAMLError) -> yaml_event_t {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else { throw error() }
        return event
    }

    mutating func register(_ anchor: UnsafeMutablePointer<yaml_char_t>?, _ node: Node) {
        guard let name = Self.string(anchor) else { return }
        anchors[name] = node   // a later anchor of the same name shadows the earlier one
    }

    /// Keys equal in text and resolved tag, reported sorted with the first one's line.
    static func refuseDuplicateKeys(_ pairs: [(key: Node, value: Node)]) throws(YAMLError) {
        var seen: [KeyIdentity: Mark] = [:]
        var duplicates: [KeyIdentity: Mark] = [:]
        for (key, _) in pairs {
            let identity = KeyIdentity(key)
            if let first = seen[identity] {
                duplicates[identity] = first
            } else {
                seen[identity] = key.mark
            }
        }
        guard !duplicates.isEmpty else { return }
        let sorted = duplicates.sorted { $0.key.text < $1.key.text }
        throw YAMLError(kind: .duplicateKeys, problem: "duplicate keys", mark: sorted[0].value,
                        duplicateKeys: sorted.map(\.key.text))
    }

    /// libyaml's error, with the position it names (1-based).
    func error() -> YAMLError {
        let p = parser.pointee
        let problem = p.problem.map { String(cString: $0) } ?? "unknown error"
        let context = p.context.map { (String(cString: $0), Self.mark(p.context_mark)) }
        switch p.error {
        case YAML_MEMORY_ERROR:
            return YAMLError(kind: .memory, problem: problem, mark: Self.mark(p.problem_mark))
        case YAML_READER_ERROR:
            // The reader names a byte offset, not a line: count the lines before it.
            let offset = min(Int(p.problem_offset), bytes.count)
            let before = bytes[..<offset]
            let line = before.lazy.filter { $0 == UInt8(ascii: "\n") }.count + 1
            let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
            return YAMLError(kind: .reader, problem: problem, mark: Mark(line: line, column: offset - lineStart + 1))
        case YAML_SCANNER_ERROR:
            return YAMLError(kind: .scanner, problem: problem, mark: Self.mark(p.problem_mark), context: context)
        case YAML_PARSER_ERROR:
            return YAMLError(kind: .parser, problem: problem, mark: Self.mark(p.problem_mark), context: context)
        default:
            return YAMLError(kind: .composer, problem: problem, mark: Self.mark(p.problem_mark), context: context)
        }
    }

    static func mark(_ mark: yaml_mark_t) -> Mark {
        Mark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    static func style(_ style: yaml_scalar_style_t) -> Scalar.Style {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: .literal
        case YAML_FOLDED_SCALAR_STYLE: .folded
        default: .plain
        }
    }
}

/// What makes two mapping keys the same key: a scalar's text and resolved tag; a mapping or
/// sequence used as a key, its structure.
private struct KeyIdentity: Hashable {
    let text: String
    let tag: String

    init(_ node: Node) {
        switch node {
        case .scalar(let scalar):
            text = scalar.string
            tag = scalar.resolvedTag
        case .sequence, .mapping:
            text = Self.render(node)
            tag = "collection"
        }
    }

    private static func render(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): "\(scalar.resolvedTag):\(scalar.string.debugDescription)"
        case .sequence(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .mapping(let pairs): "{" + pairs.map { render($0.key) + ":" + render($0.value) }.joined(separator: ",") + "}"
        }
    }
}
