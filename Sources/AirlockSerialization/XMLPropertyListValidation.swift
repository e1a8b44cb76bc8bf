/// The structure of an XML property list (Apple's `PropertyList-1.0.dtd`), read after
/// `XMLValidation` found the document well-formed.
///
/// The root is `<plist>` (its `version`, when given, is "1.0") holding exactly one value:
/// `dict`, `array`, `string`, `integer`, `real`, `true`, `false`, `date` or `data`. A `<dict>`
/// alternates `<key>` and a value. Between elements only whitespace, comments and processing
/// instructions. Checked leaf contents: a decimal or `0x` hex integer that fits 64 bits (signed
/// when negative), a decimal real or nan/inf/infinity, an ISO 8601 date as CoreFoundation
/// writes it (`YYYY-MM-DDTHH:MM:SSZ`, trailing parts optional), padded base64 data; `true`
/// and `false` are empty. Number, date and data contents may not use references or CDATA.
enum XMLPropertyListValidation {
    /// Nil when `bytes` is a well-formed XML property list, otherwise a description ending "at byte N".
    static func check(_ bytes: UnsafeRawBufferPointer) -> String? {
        if let failure = XMLValidation.check(bytes) { return failure }
        guard let base = bytes.baseAddress else { return "empty document at byte 0" }
        var reader = Reader(tokens: XMLTokens(p: base.assumingMemoryBound(to: UInt8.self), end: bytes.count))
        do {
            try reader.document()
            return nil
        } catch {
            return error.description
        }
    }

    /// The elements of the property-list vocabulary.
    enum Element: String {
        case plist, dict, array, key, string, integer, real, date, data
        case `true`, `false`
    }

    private struct Reader {
        var tokens: XMLTokens

        /// An open `plist`, `dict` or `array` element.
        private struct Container {
            let element: Element
            var values = 0
            /// In a dict: a key was read and its value is due.
            var awaitingValue = false
        }

        mutating func document() throws(XMLValidation.Failure) {
            let root = try rootStartTag()
            guard tokens.element(root.name) == .plist else {
                throw failure(at: root.offset, "root element is <\(tokens.text(root.name))>, not <plist>")
            }
            if let version = tokens.attribute("version", in: root.attributes), !tokens.equals(version, "1.0") {
                throw failure(at: version.lowerBound, "unsupported plist version '\(tokens.text(version))'")
            }
            guard !root.isEmpty else { throw failure(at: root.offset, "<plist> holds no value") }
            var open = [Container(element: .plist)]
            while let top = open.last {
                switch tokens.next() {
                case .text(let range):
                    if let offset = tokens.firstNonSpace(in: range) {
                        throw failure(at: offset, "text directly inside <\(top.element.rawValue)>")
                    }
                case .marked(let offset):
                    throw failure(at: offset, "text directly inside <\(top.element.rawValue)>")
                case .end(let offset):
                    if top.element == .plist, top.values == 0 { throw failure(at: offset, "<plist> holds no value") }
                    if top.awaitingValue { throw failure(at: offset, "<key> without a value at the end of <dict>") }
                    open.removeLast()
                case .start(let tag):
                    let element = tokens.element(tag.name)
                    if top.element == .dict, !top.awaitingValue {
                        guard element == .key else {
                            throw failure(at: tag.offset, "<\(tokens.text(tag.name))> where <dict> expects a <key>")
                        }
                        try leaf(.key, tag)
                        open[open.count - 1].awaitingValue = true
                        continue
                    }
                    if top.element == .plist, top.values == 1 {
                        throw failure(at: tag.offset, "second value in <plist>")
                    }
                    guard let element, element != .plist, element != .key else {
                        let name = tokens.text(tag.name)
                        throw failure(at: tag.offset, name != "key" ? "unknown element <\(name)>"
                            : top.element == .dict ? "<key> where <dict> expects a value" : "<key> outside a <dict>")
                    }
                    open[open.count - 1].values += 1
                    open[open.count - 1].awaitingValue = false
                    if element == .dict || element == .array {
                        if !tag.isEmpty { open.append(Container(element: element)) }
                    } else {
                        try leaf(element, tag)
                    }
                case .endOfDocument:
                    throw failure(at: tokens.i, "unexpected end of document")
                }
            }
        }

        /// Skips the prolog (whitespace, comments, processing instructions, DOCTYPE) to the root.
        mutating func rootStartTag() throws(XMLValidation.Failure) -> XMLTokens.StartTag {
            while true {
                switch tokens.next() {
                case .start(let tag): return tag
                case .text: continue
                case .marked(let offset), .end(let offset): throw failure(at: offset, "no root element")
                case .endOfDocument: throw failure(at: tokens.i, "no root element")
                }
            }
        }

        /// Reads a leaf element's content up to its end tag and checks it.
        mutating func leaf(_ element: Element, _ tag: XMLTokens.StartTag) throws(XMLValidation.Failure) {
            var content: [UInt8] = []
            var marked = false
            if !tag.isEmpty {
                reading: while true {
                    switch tokens.next() {
                    case .text(let range): content.append(contentsOf: tokens.bytes(range))
                    case .marked: marked = true
                    case .end: break reading
                    case .start(let child):
                        throw failure(at: child.offset, "element <\(tokens.text(child.name))> inside <\(element.rawValue)>")
                    case .endOfDocument: throw failure(at: tokens.i, "unexpected end of document")
                    }
                }
            }
            let valid: Bool
            switch element {
            case .string, .key: return
            case .true, .false: valid = content.isEmpty && !marked
            case .integer: valid = !marked && PropertyListScalars.isInteger(content)
            case .real: valid = !marked && PropertyListScalars.isReal(content)
            case .date: valid = !marked && PropertyListScalars.isDate(content)
            case .data: valid = !marked && PropertyListScalars.isBase64(content)
            case .plist, .dict, .array: return
            }
            guard valid else {
                if element == .true || element == .false {
                    throw failure(at: tag.offset, "<\(element.rawValue)> is not empty")
                }
                let shown = content.count > 40 ? Array(content.prefix(40)) + Array("…".utf8) : content
                throw failure(at: tag.offset, "malformed <\(element.rawValue)> '\(String(decoding: shown, as: UTF8.self))'")
            }
        }

        func failure(at offset: Int, _ message: String) -> XMLValidation.Failure {
            XMLValidation.Failure(offset: offset, message: message)
        }
    }
}
