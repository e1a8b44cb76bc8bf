/// Strict RFC 8259 checking over raw bytes, with no allocation on the success path.
public enum JSONValidation {
    /// Containers nested deeper than this are rejected (the 513th `[` fails).
    public static let maximumDepth = 512

    /// RFC 8259 strict: one value of any type, optional whitespace around it; UTF-8 valid;
    /// numbers per the grammar; string escapes including `\u` surrogate pairs; nesting up to
    /// `maximumDepth`. Returns nil when valid, otherwise a description ending "at byte N".
    public static func check(_ bytes: UnsafeRawBufferPointer) -> String? {
        scan(bytes).failure?.description
    }

    struct Failure: Error {
        let offset: Int
        let message: String
        var description: String { "\(message) at byte \(offset)" }
    }

    struct Outcome {
        var failure: Failure?
        /// A `null` appeared as an object member value or array element (there is something to strip).
        var hasNullInContainer: Bool
    }

    static func scan(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return Outcome(failure: Failure(offset: 0, message: "no JSON value"), hasNullInContainer: false)
        }
        var scanner = Scanner(p: base.assumingMemoryBound(to: UInt8.self), end: bytes.count)
        do {
            try scanner.document()
            return Outcome(failure: nil, hasNullInContainer: scanner.sawNullInContainer)
        } catch {
            return Outcome(failure: error, hasNullInContainer: false)
        }
    }

    /// Recursive descent; recursion depth is bounded by `maximumDepth`.
    private struct Scanner {
        let p: UnsafePointer<UInt8>
        let end: Int
        var i = 0
        var sawNullInContainer = false

        init(p: UnsafePointer<UInt8>, end: Int) {
            self.p = p
            self.end = end
        }

        mutating func document() throws(Failure) {
            skipWhitespace()
            guard i < end else { throw Failure(offset: i, message: "no JSON value") }
            _ = try value(depth: 0)
            skipWhitespace()
            guard i == end else { throw unexpected("after the JSON value") }
        }

        @inline(__always)
        mutating func skipWhitespace() {
            var j = i
            while j < end {
                let b = p[j]
                guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { break }
                j += 1
            }
            i = j
        }

        func unexpected(_ context: String) -> Failure {
            guard i < end else { return Failure(offset: i, message: "unexpected end of input \(context)") }
            return Failure(offset: i, message: "unexpected \(UTF8Decoding.describe(p[i])) \(context)")
        }

        /// Returns true when the value was the literal `null`.
        mutating func value(depth: Int) throws(Failure) -> Bool {
            guard i < end else { throw unexpected("where a value was expected") }
            switch p[i] {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal(0x74, 0x72, 0x75, 0x65, count: 4)  // true
            case UInt8(ascii: "f"): try literal(0x66, 0x61, 0x6C, 0x73, 0x65, count: 5)  // false
            case UInt8(ascii: "n"):
                try literal(0x6E, 0x75, 0x6C, 0x6C, count: 4)  // null
                return true
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            default: throw unexpected("where a value was expected")
            }
            return false
        }

        mutating func object(depth: Int) throws(Failure) {
            guard depth <= maximumDepth else {
                throw Failure(offset: i, message: "nesting deeper than \(maximumDepth) levels")
            }
            i += 1
            skipWhitespace()
            if i < end && p[i] == UInt8(ascii: "}") {
                i += 1
                return
            }
            while true {
                guard i < end, p[i] == UInt8(ascii: "\"") else { throw unexpected("where an object key was expected") }
                try string()
                skipWhitespace()
                guard i < end, p[i] == UInt8(ascii: ":") else { throw unexpected("where ':' was expected") }
                i += 1
                skipWhitespace()
                if try value(depth: depth) { sawNullInContainer = true }
                skipWhitespace()
                guard i < end else { throw unexpected("in an object") }
                switch p[i] {
                case UInt8(ascii: ","):
                    i += 1
                    skipWhitespace()
                    if i < end && p[i] == UInt8(ascii: "}") { throw Failure(offset: i, message: "trailing comma") }
                case UInt8(ascii: "}"):
                    i += 1
                    return
                default:
                    throw unexpected("where ',' or '}' was expected")
                }
            }
        }

        mutating func array(depth: Int) throws(Failure) {
            guard depth <= maximumDepth else {
                throw Failure(offset: i, message: "nesting deeper than \(maximumDepth) levels")
            }
            i += 1
            skipWhitespace()
            if i < end && p[i] == UInt8(ascii: "]") {
                i += 1
                return
            }
            while true {
                if try value(depth: depth) { sawNullInContainer = true }
                skipWhitespace()
                guard i < end else { throw unexpected("in an array") }
                switch p[i] {
                case UInt8(ascii: ","):
                    i += 1
                    skipWhitespace()
                    if i < end && p[i] == UInt8(ascii: "]") { throw Failure(offset: i, message: "trailing comma") }
                case UInt8(ascii: "]"):
                    i += 1
                    return
                default:
                    throw unexpected("where ',' or ']' was expected")
                }
            }
        }

        @inline(__always)
        mutating func literal(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8 = 0, count: Int)
            throws(Failure)
        {
            guard end - i >= count, p[i] == b0, p[i + 1] == b1, p[i + 2] == b2, p[i + 3] == b3,
                  count == 4 || p[i + 4] == b4
            else { throw Failure(offset: i, message: "invalid literal") }
            i += count
        }

        mutating func number() throws(Failure) {
            if p[i] == UInt8(ascii: "-") { i += 1 }
            guard i < end, isDigit(p[i]) else { throw unexpected("where a digit was expected") }
            if p[i] == UInt8(ascii: "0") {
                i += 1
                if i < end && isDigit(p[i]) { throw Failure(offset: i - 1, message: "leading zero in a number") }
            } else {
                skipDigits()
            }
            if i < end && p[i] == UInt8(ascii: ".") {
                i += 1
                guard i < end, isDigit(p[i]) else { throw unexpected("where a fraction digit was expected") }
                skipDigits()
            }
            if i < end && (p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E")) {
                i += 1
                if i < end && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i += 1 }
                guard i < end, isDigit(p[i]) else { throw unexpected("where an exponent digit was expected") }
                skipDigits()
            }
        }

        @inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

        @inline(__always) mutating func skipDigits() {
            var j = i
            while j < end && isDigit(p[j]) { j += 1 }
            i = j
        }

        mutating func string() throws(Failure) {
            let start = i
            var j = i + 1
            while true {
                // Fast path: 8 bytes at a time while none is a quote, a backslash, a control byte or non-ASCII.
                while end - j >= 8 {
                    let word = UnsafeRawPointer(p + j).loadUnaligned(as: UInt64.self)
                    if Self.needsAttention(word) { break }
                    j += 8
                }
                while j < end {
                    let b = p[j]
                    guard b &- 0x20 < 0x60, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\") else { break }
                    j += 1
                }
                guard j < end else { throw Failure(offset: start, message: "unterminated string") }
                let b = p[j]
                if b == UInt8(ascii: "\"") {
                    i = j + 1
                    return
                } else if b == UInt8(ascii: "\\") {
                    i = j
                    try escape()
                    j = i
                } else if b < 0x20 {
                    throw Failure(offset: j, message: "unescaped control character \(UTF8Decoding.describe(b)) in a string")
                } else if b == 0x7F {
                    j += 1
                } else {
                    guard let (_, length) = UTF8Decoding.decode(p, at: j, end: end) else {
                        throw Failure(offset: j, message: "invalid UTF-8")
                    }
                    j += length
                }
            }
        }

        /// True when some byte of `word` is below 0x20, a '"', a '\\' or 0x80 and above
        /// (the zero-byte test of "Bit Twiddling Hacks", applied per pattern).
        @inline(__always)
        static func needsAttention(_ word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let high: UInt64 = 0x8080_8080_8080_8080
            let control = (word &- ones &* 0x20) & ~word
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let quoteZero = (quote &- ones) & ~quote
            let backslashZero = (backslash &- ones) & ~backslash
            return (control | quoteZero | backslashZero | word) & high != 0
        }

        mutating func escape() throws(Failure) {
            let start = i
            guard i + 1 < end else { throw Failure(offset: start, message: "unterminated string") }
            switch p[i + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                i += 2
            case UInt8(ascii: "u"):
                let unit = try hex4(at: i + 2, escapeStart: start)
                i += 6
                if (0xDC00...0xDFFF).contains(unit) {
                    throw Failure(offset: start, message: "lone low surrogate \\u escape")
                }
                if (0xD800...0xDBFF).contains(unit) {
                    guard i + 1 < end, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u"),
                          (0xDC00...0xDFFF).contains(try hex4(at: i + 2, escapeStart: i))
                    else { throw Failure(offset: start, message: "high surrogate \\u escape without a low surrogate") }
                    i += 6
                }
            default:
                throw Failure(offset: start, message: "invalid escape sequence")
            }
        }

        func hex4(at position: Int, escapeStart: Int) throws(Failure) -> UInt32 {
            guard end - position >= 4 else { throw Failure(offset: escapeStart, message: "invalid \\u escape") }
            var value: UInt32 = 0
            for k in 0..<4 {
                let b = p[position + k]
                let digit: UInt8
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - 0x30
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - 0x57
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - 0x37
                default: throw Failure(offset: escapeStart, message: "invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
    }
}
