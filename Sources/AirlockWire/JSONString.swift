/// A JSON string's contents (RFC 8259 §7), escaped into UTF-8 bytes: the one escaper behind the
/// JSON log lines, the gateway's and the admin API's error bodies, and the `json` request
/// serializer.
///
/// Every style escapes `"` and `\`, every control character (U+0000…U+001F), and U+2028 and
/// U+2029 (`\u2028`, `\u2029`: valid JSON either way, but escaped they are also safe in
/// JavaScript source and in line-oriented readers). Swift strings are valid Unicode, so
/// everything else is copied through as valid UTF-8. `/` is never escaped (RFC 8259 does not ask
/// for it). The styles differ only in how control characters and DEL are spelled (`Style`).
///
/// One byte loop over the string's UTF-8: runs that need no escaping are copied whole. No
/// Foundation; `@inlinable` so the log writer's call folds the style and inlines the loop.
public enum JSONString {
    /// How control characters and DEL are written.
    public struct Style: Sendable, Equatable {
        /// `\b \f \n \r \t` in their two-character forms; otherwise every control character is
        /// `\u00XX` (lowercase hex).
        public var shortEscapes: Bool
        /// DEL (U+007F) as `\u007f`; otherwise as it is (RFC 8259 allows it).
        public var escapesDelete: Bool

        @inlinable
        public init(shortEscapes: Bool, escapesDelete: Bool) {
            self.shortEscapes = shortEscapes
            self.escapesDelete = escapesDelete
        }

        /// Log lines: every control character and DEL as `\u00XX`, so a line holds no control
        /// byte at all and one `grep '\\u00'` finds them all.
        @inlinable
        public static var log: Style { Style(shortEscapes: false, escapesDelete: true) }

        /// JSON documents (response bodies, request bodies): the short forms, DEL as it is, as
        /// `NSJSONSerialization` writes (without its `\/`).
        @inlinable
        public static var document: Style { Style(shortEscapes: true, escapesDelete: false) }
    }

    /// `"text"`, escaped.
    @inlinable
    public static func appendQuoted(_ text: String, to out: inout [UInt8], style: Style) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(text, to: &out, style: style)
        out.append(UInt8(ascii: "\""))
    }

    /// `text` escaped, without the quotes.
    @inlinable
    public static func appendEscaped(_ text: String, to out: inout [UInt8], style: Style) {
        var text = text
        text.withUTF8 { utf8 in
            let n = utf8.count
            var run = 0   // start of the bytes not yet copied
            var i = 0
            while i < n {
                let b = utf8[i]
                if b >= 0x20 && b != 0x22 && b != 0x5C && b != 0x7F && b != 0xE2 {
                    i += 1
                    continue
                }
                var width = 1
                switch b {
                case 0x22, 0x5C:
                    copy(utf8, run..<i, to: &out)
                    out.append(0x5C)
                    out.append(b)
                case 0x7F:
                    guard style.escapesDelete else { i += 1; continue }
                    copy(utf8, run..<i, to: &out)
                    appendUnicodeEscape(0x7F, to: &out)
                case 0xE2:
                    // U+2028 / U+2029 are E2 80 A8 / E2 80 A9; other E2 sequences stay literal.
                    guard i + 2 < n, utf8[i + 1] == 0x80, utf8[i + 2] == 0xA8 || utf8[i + 2] == 0xA9 else {
                        i += 1
                        continue
                    }
                    copy(utf8, run..<i, to: &out)
                    appendUnicodeEscape(utf8[i + 2] == 0xA8 ? 0x2028 : 0x2029, to: &out)
                    width = 3
                default:   // below 0x20
                    copy(utf8, run..<i, to: &out)
                    let short: UInt8? = switch b {
                    case 0x08: UInt8(ascii: "b")
                    case 0x0C: UInt8(ascii: "f")
                    case 0x0A: UInt8(ascii: "n")
                    case 0x0D: UInt8(ascii: "r")
                    case 0x09: UInt8(ascii: "t")
                    default: nil
                    }
                    if style.shortEscapes, let short {
                        out.append(0x5C)
                        out.append(short)
                    } else {
                        appendUnicodeEscape(UInt16(b), to: &out)
                    }
                }
                i += width
                run = i
            }
            copy(utf8, run..<n, to: &out)
        }
    }

    @inlinable @inline(__always)
    static func copy(_ utf8: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, to out: inout [UInt8]) {
        if !range.isEmpty { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[range])) }
    }

    /// `\uXXXX`, lowercase hex.
    @inlinable
    static func appendUnicodeEscape(_ value: UInt16, to out: inout [UInt8]) {
        out.append(0x5C)
        out.append(UInt8(ascii: "u"))
        var shift: UInt16 = 12
        while true {
            let digit = UInt8((value >> shift) & 0xF)
            out.append(digit < 10 ? 0x30 + digit : 0x57 + digit)
            if shift == 0 { break }
            shift -= 4
        }
    }
}
