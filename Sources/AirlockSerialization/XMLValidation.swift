/// XML 1.0 well-formedness over raw UTF-8 bytes, without building a tree.
///
/// Accepted: an optional BOM and XML declaration, comments, processing instructions, a DOCTYPE
/// with an optional external ID (an internal subset is refused: its entities could not be checked),
/// exactly one root element whose tags nest and match, quoted attribute values without duplicates,
/// the five predefined entities and numeric character references, CDATA sections. Outside the root
/// only whitespace, comments and processing instructions. Namespaces are not checked.
public enum XMLValidation {
    /// Nil when `bytes` is a well-formed document, otherwise a description ending "at byte N".
    public static func check(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return "empty document at byte 0" }
        var scanner = Scanner(p: base.assumingMemoryBound(to: UInt8.self), end: bytes.count)
        do {
            try scanner.document()
            return nil
        } catch {
            return error.description
        }
    }

    struct Failure: Error {
        let offset: Int
        let message: String
        var description: String { "\(message) at byte \(offset)" }
    }

    private struct Scanner {
        let p: UnsafePointer<UInt8>
        let end: Int
        var i = 0
        /// Names of the open elements, innermost last.
        var open: [Range<Int>] = []
        /// Attribute names of the start tag being read.
        var attributes: [Range<Int>] = []

        init(p: UnsafePointer<UInt8>, end: Int) {
            self.p = p
            self.end = end
        }

        // MARK: Document and prolog

        mutating func document() throws(Failure) {
            if starts(with: "\u{FEFF}") { i += 3 }
            if starts(with: "<?xml"), i + 5 < end, isSpace(p[i + 5]) { try xmlDeclaration() }
            var seenRoot = false
            var seenDoctype = false
            while true {
                skipSpace()
                guard i < end else { break }
                guard p[i] == UInt8(ascii: "<") else {
                    throw Failure(offset: i, message: seenRoot ? "text after the root element" : "text before the root element")
                }
                if starts(with: "<?") {
                    try processingInstruction()
                } else if starts(with: "<!--") {
                    try comment()
                } else if starts(with: "<!DOCTYPE") {
                    guard !seenRoot, !seenDoctype else {
                        throw Failure(offset: i, message: seenRoot ? "DOCTYPE after the root element" : "second DOCTYPE")
                    }
                    try doctype()
                    seenDoctype = true
                } else if starts(with: "</") {
                    throw Failure(offset: i, message: "end tag without a start tag")
                } else if starts(with: "<!") {
                    throw Failure(offset: i, message: "unexpected markup declaration outside the root element")
                } else {
                    guard !seenRoot else { throw Failure(offset: i, message: "second root element") }
                    try element()
                    seenRoot = true
                }
            }
            guard seenRoot else { throw Failure(offset: i, message: "no root element") }
        }

        /// `<?xml version="1.x" (encoding="...")? (standalone="yes|no")? ?>`
        mutating func xmlDeclaration() throws(Failure) {
            i += 5
            skipSpace()
            guard starts(with: "version") else { throw unexpected("where 'version' was expected in the XML declaration") }
            i += 7
            let version = try declarationValue()
            guard version.count >= 3, p[version.lowerBound] == UInt8(ascii: "1"),
                  p[version.lowerBound + 1] == UInt8(ascii: "."),
                  version.dropFirst(2).allSatisfy({ isDigit(p[$0]) })
            else { throw Failure(offset: version.lowerBound, message: "unsupported XML version") }
            var hadSpace = skipSpace()
            if hadSpace, starts(with: "encoding") {
                i += 8
                let encoding = try declarationValue()
                guard let first = encoding.first, isLetter(p[first]),
                      encoding.allSatisfy({ isLetter(p[$0]) || isDigit(p[$0]) || [0x2E, 0x5F, 0x2D].contains(p[$0]) })
                else { throw Failure(offset: encoding.lowerBound, message: "malformed encoding name") }
                hadSpace = skipSpace()
            }
            if hadSpace, starts(with: "standalone") {
                i += 10
                let standalone = try declarationValue()
                guard equals(standalone, "yes") || equals(standalone, "no") else {
                    throw Failure(offset: standalone.lowerBound, message: "standalone must be 'yes' or 'no'")
                }
                skipSpace()
            }
            guard starts(with: "?>") else { throw unexpected("in the XML declaration") }
            i += 2
        }

        /// `S? '=' S? ('"' ... '"' | "'" ... "'")`, returning the range between the quotes.
        mutating func declarationValue() throws(Failure) -> Range<Int> {
            skipSpace()
            guard i < end, p[i] == UInt8(ascii: "=") else { throw unexpected("where '=' was expected") }
            i += 1
            skipSpace()
            guard i < end, p[i] == UInt8(ascii: "\"") || p[i] == UInt8(ascii: "'") else {
                throw unexpected("where a quoted value was expected")
            }
            let quote = p[i]
            i += 1
            let start = i
            while i < end, p[i] != quote {
                guard p[i] < 0x80, p[i] != UInt8(ascii: "<") else { throw unexpected("in the XML declaration") }
                i += 1
            }
            guard i < end else { throw Failure(offset: start - 1, message: "unterminated value") }
            i += 1
            return start..<(i - 1)
        }

        /// `<!DOCTYPE name (SYSTEM "..." | PUBLIC "..." "...")? S? >`
        mutating func doctype() throws(Failure) {
            let start = i
            i += 9
            guard skipSpace() else { throw unexpected("after <!DOCTYPE") }
            _ = try name()
            var hadSpace = skipSpace()
            if hadSpace, starts(with: "SYSTEM") {
                i += 6
                guard skipSpace() else { throw unexpected("after SYSTEM") }
                try literal(publicID: false)
                hadSpace = skipSpace()
            } else if hadSpace, starts(with: "PUBLIC") {
                i += 6
                guard skipSpace() else { throw unexpected("after PUBLIC") }
                try literal(publicID: true)
                guard skipSpace() else { throw unexpected("where a system literal was expected") }
                try literal(publicID: false)
                hadSpace = skipSpace()
            }
            guard i < end else { throw Failure(offset: start, message: "unterminated DOCTYPE") }
            if p[i] == UInt8(ascii: "[") {
                throw Failure(offset: i, message: "DOCTYPE internal subsets are not supported")
            }
            guard p[i] == UInt8(ascii: ">") else { throw unexpected("in the DOCTYPE") }
            i += 1
        }

        mutating func literal(publicID: Bool) throws(Failure) {
            guard i < end, p[i] == UInt8(ascii: "\"") || p[i] == UInt8(ascii: "'") else {
                throw unexpected("where a quoted literal was expected")
            }
            let quote = p[i]
            let start = i
            i += 1
            while true {
                guard i < end else { throw Failure(offset: start, message: "unterminated literal") }
                if p[i] == quote { break }
                if publicID {
                    guard isPublicIDChar(p[i]) else { throw unexpected("in a public identifier") }
                    i += 1
                } else {
                    try char()
                }
            }
            i += 1
        }

        // MARK: Elements

        /// The root element and everything inside it, without recursion.
        mutating func element() throws(Failure) {
            guard let root = try startTag() else { return }
            open.append(root)
            while let innermost = open.last {
                guard i < end else {
                    throw Failure(offset: i, message: "unclosed element <\(text(innermost))>")
                }
                switch p[i] {
                case UInt8(ascii: "<"):
                    if starts(with: "</") {
                        try endTag()
                    } else if starts(with: "<!--") {
                        try comment()
                    } else if starts(with: "<![CDATA[") {
                        try cdata()
                    } else if starts(with: "<?") {
                        try processingInstruction()
                    } else if starts(with: "<!") {
                        throw Failure(offset: i, message: "unexpected markup declaration in content")
                    } else if let child = try startTag() {
                        open.append(child)
                    }
                case UInt8(ascii: "&"):
                    try reference()
                default:
                    try characterData()
                }
            }
        }

        /// Reads a start tag; returns its name, or nil for an empty-element tag (`<a/>`).
        mutating func startTag() throws(Failure) -> Range<Int>? {
            let start = i
            i += 1
            let elementName = try name()
            attributes.removeAll(keepingCapacity: true)
            while true {
                let hadSpace = skipSpace()
                guard i < end else { throw Failure(offset: start, message: "unterminated start tag") }
                if p[i] == UInt8(ascii: ">") {
                    i += 1
                    return elementName
                }
                if p[i] == UInt8(ascii: "/") {
                    guard i + 1 < end, p[i + 1] == UInt8(ascii: ">") else { throw unexpected("in a start tag") }
                    i += 2
                    return nil
                }
                guard hadSpace else { throw unexpected("in a start tag") }
                let attribute = try name()
                for existing in attributes where same(existing, attribute) {
                    throw Failure(offset: attribute.lowerBound, message: "duplicate attribute '\(text(attribute))'")
                }
                attributes.append(attribute)
                skipSpace()
                guard i < end, p[i] == UInt8(ascii: "=") else { throw unexpected("where '=' was expected") }
                i += 1
                skipSpace()
                try attributeValue()
            }
        }

        mutating func attributeValue() throws(Failure) {
            guard i < end, p[i] == UInt8(ascii: "\"") || p[i] == UInt8(ascii: "'") else {
                throw unexpected("where a quoted attribute value was expected")
            }
            let quote = p[i]
            let start = i
            i += 1
            while true {
                guard i < end else { throw Failure(offset: start, message: "unterminated attribute value") }
                switch p[i] {
                case quote:
                    i += 1
                    return
                case UInt8(ascii: "<"):
                    throw Failure(offset: i, message: "'<' in an attribute value")
                case UInt8(ascii: "&"):
                    try reference()
                default:
                    try char()
                }
            }
        }

        mutating func endTag() throws(Failure) {
            let start = i
            i += 2
            let closing = try name()
            skipSpace()
            guard i < end, p[i] == UInt8(ascii: ">") else { throw unexpected("in an end tag") }
            i += 1
            let opening = open.removeLast()
            guard same(opening, closing) else {
                throw Failure(offset: start, message: "end tag </\(text(closing))> does not match <\(text(opening))>")
            }
        }

        /// A run of text up to the next `<` or `&`; `]]>` may not appear in it.
        mutating func characterData() throws(Failure) {
            while i < end {
                let b = p[i]
                if b == UInt8(ascii: "<") || b == UInt8(ascii: "&") { return }
                if b == UInt8(ascii: "]"), starts(with: "]]>") {
                    throw Failure(offset: i, message: "']]>' in character data")
                }
                if b >= 0x20 && b < 0x80 {
                    i += 1
                } else {
                    try char()
                }
            }
        }

        /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` `&#N;` `&#xH;`.
        mutating func reference() throws(Failure) {
            let start = i
            i += 1
            if i < end, p[i] == UInt8(ascii: "#") {
                i += 1
                let hex = i < end && p[i] == UInt8(ascii: "x")
                if hex { i += 1 }
                var value: UInt32 = 0
                var digits = 0
                while i < end {
                    let b = p[i]
                    let digit: UInt32
                    if isDigit(b) {
                        digit = UInt32(b - 0x30)
                    } else if hex, (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b | 0x20) {
                        digit = UInt32((b | 0x20) - 0x57)
                    } else {
                        break
                    }
                    value = min(value * (hex ? 16 : 10) + digit, 0x110000)
                    digits += 1
                    i += 1
                }
                guard digits > 0, i < end, p[i] == UInt8(ascii: ";") else {
                    throw Failure(offset: start, message: "malformed character reference")
                }
                i += 1
                guard isXMLChar(value) else {
                    throw Failure(offset: start, message: "character reference to a character XML does not allow")
                }
                return
            }
            guard i < end, isNameStartASCII(p[i]) || p[i] >= 0x80 else {
                throw Failure(offset: start, message: "'&' not starting a reference")
            }
            let entity = try name()
            guard i < end, p[i] == UInt8(ascii: ";") else {
                throw Failure(offset: start, message: "entity reference without ';'")
            }
            i += 1
            guard equals(entity, "lt") || equals(entity, "gt") || equals(entity, "amp") || equals(entity, "quot")
                || equals(entity, "apos")
            else { throw Failure(offset: start, message: "undeclared entity '&\(text(entity));'") }
        }

        // MARK: Comments, processing instructions, CDATA

        mutating func comment() throws(Failure) {
            let start = i
            i += 4
            while true {
                guard i < end else { throw Failure(offset: start, message: "unterminated comment") }
                if p[i] == UInt8(ascii: "-"), i + 1 < end, p[i + 1] == UInt8(ascii: "-") {
                    guard i + 2 < end, p[i + 2] == UInt8(ascii: ">") else {
                        throw Failure(offset: i, message: "'--' inside a comment")
                    }
                    i += 3
                    return
                }
                try char()
            }
        }

        mutating func processingInstruction() throws(Failure) {
            let start = i
            i += 2
            let target = try name()
            if target.count == 3, (p[target.lowerBound] | 0x20) == UInt8(ascii: "x"),
               (p[target.lowerBound + 1] | 0x20) == UInt8(ascii: "m"), (p[target.lowerBound + 2] | 0x20) == UInt8(ascii: "l") {
                throw Failure(offset: start, message: "XML declaration not at the start of the document")
            }
            if starts(with: "?>") {
                i += 2
                return
            }
            guard i < end, isSpace(p[i]) else { throw unexpected("after a processing instruction target") }
            while true {
                guard i < end else { throw Failure(offset: start, message: "unterminated processing instruction") }
                if starts(with: "?>") {
                    i += 2
                    return
                }
                try char()
            }
        }

        mutating func cdata() throws(Failure) {
            let start = i
            i += 9
            while true {
                guard i < end else { throw Failure(offset: start, message: "unterminated CDATA section") }
                if starts(with: "]]>") {
                    i += 3
                    return
                }
                try char()
            }
        }

        // MARK: Names and characters

        mutating func name() throws(Failure) -> Range<Int> {
            let start = i
            guard i < end else { throw unexpected("where a name was expected") }
            if p[i] < 0x80 {
                guard isNameStartASCII(p[i]) else { throw unexpected("where a name was expected") }
                i += 1
            } else {
                guard let (scalar, length) = UTF8Decoding.decode(p, at: i, end: end) else {
                    throw Failure(offset: i, message: "invalid UTF-8")
                }
                guard isNameStart(scalar) else { throw unexpected("where a name was expected") }
                i += length
            }
            while i < end {
                let b = p[i]
                if b < 0x80 {
                    guard isNameStartASCII(b) || isDigit(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") else { break }
                    i += 1
                } else {
                    guard let (scalar, length) = UTF8Decoding.decode(p, at: i, end: end) else {
                        throw Failure(offset: i, message: "invalid UTF-8")
                    }
                    guard isNameStart(scalar) || scalar == 0xB7 || (0x300...0x36F).contains(scalar)
                        || (0x203F...0x2040).contains(scalar)
                    else { break }
                    i += length
                }
            }
            return start..<i
        }

        /// Validates and steps over one character (XML 1.0 `Char`).
        @inline(__always)
        mutating func char() throws(Failure) {
            let b = p[i]
            if b < 0x80 {
                guard b >= 0x20 || b == 0x09 || b == 0x0A || b == 0x0D else {
                    throw Failure(offset: i, message: "control character \(UTF8Decoding.describe(b))")
                }
                i += 1
                return
            }
            guard let (scalar, length) = UTF8Decoding.decode(p, at: i, end: end) else {
                throw Failure(offset: i, message: "invalid UTF-8")
            }
            guard isXMLChar(scalar) else { throw Failure(offset: i, message: "character XML does not allow") }
            i += length
        }

        func isXMLChar(_ scalar: UInt32) -> Bool {
            switch scalar {
            case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
            default: false
            }
        }

        func isNameStart(_ scalar: UInt32) -> Bool {
            switch scalar {
            case 0x3A, 0x41...0x5A, 0x5F, 0x61...0x7A, 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D,
                 0x37F...0x1FFF, 0x200C...0x200D, 0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF,
                 0xF900...0xFDCF, 0xFDF0...0xFFFD, 0x10000...0xEFFFF:
                true
            default:
                false
            }
        }

        @inline(__always) func isNameStartASCII(_ b: UInt8) -> Bool {
            isLetter(b) || b == UInt8(ascii: "_") || b == UInt8(ascii: ":")
        }

        @inline(__always) func isLetter(_ b: UInt8) -> Bool { (b | 0x20) &- 0x61 < 26 }
        @inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }
        @inline(__always) func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

        func isPublicIDChar(_ b: UInt8) -> Bool {
            isLetter(b) || isDigit(b) || b == 0x20 || b == 0x0D || b == 0x0A
                || Array("-'()+,./:=?;!*#@$_%".utf8).contains(b)
        }

        @discardableResult
        mutating func skipSpace() -> Bool {
            let start = i
            while i < end, isSpace(p[i]) { i += 1 }
            return i > start
        }

        func starts(with prefix: StaticString) -> Bool {
            let count = prefix.utf8CodeUnitCount
            guard end - i >= count else { return false }
            let bytes = prefix.utf8Start
            for k in 0..<count where p[i + k] != bytes[k] { return false }
            return true
        }

        func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
            guard range.count == literal.utf8CodeUnitCount else { return false }
            let bytes = literal.utf8Start
            for k in 0..<range.count where p[range.lowerBound + k] != bytes[k] { return false }
            return true
        }

        func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
            guard a.count == b.count else { return false }
            for k in 0..<a.count where p[a.lowerBound + k] != p[b.lowerBound + k] { return false }
            return true
        }

        func text(_ range: Range<Int>) -> String {
            String(decoding: UnsafeBufferPointer(start: p + range.lowerBound, count: range.count), as: UTF8.self)
        }

        func unexpected(_ context: String) -> Failure {
            guard i < end else { return Failure(offset: i, message: "unexpected end of document \(context)") }
            return Failure(offset: i, message: "unexpected \(UTF8Decoding.describe(p[i])) \(context)")
        }
    }
}
