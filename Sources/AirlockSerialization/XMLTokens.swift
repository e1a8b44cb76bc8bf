/// The start tags, end tags and character data of an XML document that `XMLValidation` found
/// well-formed, one at a time; comments, processing instructions and the DOCTYPE are skipped.
/// It relies on that check: on a malformed document its tokens mean nothing.
struct XMLTokens {
    struct StartTag {
        let name: Range<Int>
        /// Everything between the name and the closing `>` or `/>`.
        let attributes: Range<Int>
        /// `<a/>`.
        let isEmpty: Bool
        /// The byte of its `<`.
        let offset: Int
    }

    enum Token {
        case start(StartTag)
        /// An end tag, at the byte of its `<`.
        case end(Int)
        /// A run of character data without references.
        case text(Range<Int>)
        /// A reference (`&amp;`) or a CDATA section, at its first byte.
        case marked(Int)
        case endOfDocument
    }

    let p: UnsafePointer<UInt8>
    let end: Int
    var i = 0

    init(p: UnsafePointer<UInt8>, end: Int) {
        self.p = p
        self.end = end
        if starts(with: "\u{FEFF}") { i = 3 }
    }

    mutating func next() -> Token {
        while i < end {
            let start = i
            if p[i] == UInt8(ascii: "&") {
                skip(past: ";")
                return .marked(start)
            }
            if p[i] != UInt8(ascii: "<") {
                while i < end, p[i] != UInt8(ascii: "<"), p[i] != UInt8(ascii: "&") { i += 1 }
                return .text(start..<i)
            }
            if starts(with: "<!--") {
                skip(past: "-->")
            } else if starts(with: "<?") {
                skip(past: "?>")
            } else if starts(with: "<![CDATA[") {
                skip(past: "]]>")
                return .marked(start)
            } else if starts(with: "<!") {
                _ = tagEnd()  // a DOCTYPE without an internal subset
            } else if starts(with: "</") {
                skip(past: ">")
                return .end(start)
            } else {
                i += 1
                let nameStart = i
                while i < end, !isSpace(p[i]), p[i] != UInt8(ascii: "/"), p[i] != UInt8(ascii: ">") { i += 1 }
                let name = nameStart..<i
                let close = tagEnd()
                let isEmpty = p[close - 1] == UInt8(ascii: "/")
                return .start(StartTag(name: name, attributes: name.upperBound..<(isEmpty ? close - 1 : close),
                                       isEmpty: isEmpty, offset: start))
            }
        }
        return .endOfDocument
    }

    /// Moves past the `>` that ends the current tag (quoted values may hold `>`); returns its position.
    private mutating func tagEnd() -> Int {
        var quote: UInt8?
        while i < end {
            let b = p[i]
            i += 1
            if let q = quote {
                if b == q { quote = nil }
            } else if b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") {
                quote = b
            } else if b == UInt8(ascii: ">") {
                return i - 1
            }
        }
        return end
    }

    private mutating func skip(past terminator: StaticString) {
        while i < end, !starts(with: terminator) { i += 1 }
        i = min(end, i + terminator.utf8CodeUnitCount)
    }

    // MARK: Reading what a token names

    /// The value of attribute `name` in a start tag's attribute range, between its quotes.
    func attribute(_ name: StaticString, in range: Range<Int>) -> Range<Int>? {
        var k = range.lowerBound
        while k < range.upperBound {
            while k < range.upperBound, isSpace(p[k]) { k += 1 }
            let nameStart = k
            while k < range.upperBound, !isSpace(p[k]), p[k] != UInt8(ascii: "=") { k += 1 }
            let attributeName = nameStart..<k
            while k < range.upperBound, p[k] != UInt8(ascii: "\""), p[k] != UInt8(ascii: "'") { k += 1 }
            guard k < range.upperBound else { return nil }
            let quote = p[k]
            k += 1
            let valueStart = k
            while k < range.upperBound, p[k] != quote { k += 1 }
            if equals(attributeName, name) { return valueStart..<k }
            k += 1
        }
        return nil
    }

    func element(_ name: Range<Int>) -> XMLPropertyListValidation.Element? {
        XMLPropertyListValidation.Element(rawValue: text(name))
    }

    func firstNonSpace(in range: Range<Int>) -> Int? {
        range.first { !isSpace(p[$0]) }
    }

    func bytes(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: p + range.lowerBound, count: range.count)
    }

    func text(_ range: Range<Int>) -> String {
        String(decoding: bytes(range), as: UTF8.self)
    }

    func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        bytes(range).elementsEqual(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private func starts(with prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard end - i >= count else { return false }
        return bytes(i..<(i + count)).elementsEqual(UnsafeBufferPointer(start: prefix.utf8Start, count: count))
    }

    private func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
}
