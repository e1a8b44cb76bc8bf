import AirlockWire
import Foundation
import XCTest

/// The one JSON string escaper, in both styles: every byte below 0x80 against a plain table,
/// U+2028/2029 and their neighbours, runs around escapes, and output that a JSON parser reads
/// back as the original string.
final class JSONStringTests: XCTestCase {
    private func quoted(_ text: String, _ style: JSONString.Style) -> String {
        var out: [UInt8] = [0x78]   // appends after what is there
        JSONString.appendQuoted(text, to: &out, style: style)
        XCTAssertEqual(out.first, 0x78)
        return String(decoding: out.dropFirst(), as: UTF8.self)
    }

    /// What each style writes for one ASCII scalar, spelled out from RFC 8259 §7.
    private func expected(_ scalar: UInt8, _ style: JSONString.Style) -> String {
        let shortForms: [UInt8: String] = [0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"]
        switch scalar {
        case 0x22: return "\\\""
        case 0x5C: return "\\\\"
        case 0x00..<0x20:
            if style.shortEscapes, let short = shortForms[scalar] { return short }
            let hex = String(scalar, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        case 0x7F: return style.escapesDelete ? "\\u007f" : "\u{7F}"
        default: return String(UnicodeScalar(scalar))
        }
    }

    func testEveryASCIIScalarInBothStyles() {
        for style in [JSONString.Style.log, .document] {
            for scalar in UInt8(0)..<0x80 {
                let text = String(UnicodeScalar(scalar))
                XCTAssertEqual(quoted(text, style), "\"" + expected(scalar, style) + "\"", "byte \(scalar) in \(style)")
                // Inside a run, between literal bytes, the same.
                XCTAssertEqual(quoted("ab" + text + "cd", style), "\"ab" + expected(scalar, style) + "cd\"",
                               "byte \(scalar) in a run in \(style)")
            }
        }
    }

    func testTheStylesSpellControlsAndDelete() {
        XCTAssertEqual(quoted("\u{8}\u{C}\n\r\t\u{1}\u{7F}", .document), #""\b\f\n\r\t\u0001"# + "\u{7F}\"")
        XCTAssertEqual(quoted("\u{8}\u{C}\n\r\t\u{1}\u{7F}", .log), #""\u0008\u000c\u000a\u000d\u0009\u0001\u007f""#)
    }

    func testLineAndParagraphSeparatorsAreEscapedAndTheirNeighboursAreNot() {
        for style in [JSONString.Style.log, .document] {
            XCTAssertEqual(quoted("\u{2028}", style), #""\u2028""#)
            XCTAssertEqual(quoted("a\u{2028}b\u{2029}c", style), #""a\u2028b\u2029c""#)
            XCTAssertEqual(quoted("\u{2028}\u{2029}", style), #""\u2028\u2029""#)
            XCTAssertEqual(quoted("\u{2027}\u{202A}\u{2000}é😀\u{E2}", style), "\"\u{2027}\u{202A}\u{2000}é😀\u{E2}\"")
            XCTAssertEqual(quoted("x\u{2027}", style), "\"x\u{2027}\"", "E2 80 A7 at the very end")
        }
    }

    func testEscapesAtTheEdgesAndSideBySide() {
        XCTAssertEqual(quoted("", .log), #""""#)
        XCTAssertEqual(quoted("\"", .log), #""\"""#)
        XCTAssertEqual(quoted("\"\\\"", .document), #""\"\\\"""#)
        XCTAssertEqual(quoted("\nplain\n", .document), #""\nplain\n""#)
        XCTAssertEqual(quoted("plain/path?q=1 é 日本", .log), "\"plain/path?q=1 é 日本\"")
    }

    func testAppendEscapedWritesNoQuotes() {
        var out: [UInt8] = []
        JSONString.appendEscaped("a\"b", to: &out, style: .log)
        XCTAssertEqual(String(decoding: out, as: UTF8.self), #"a\"b"#)
    }

    /// Every scalar below 0x80, the separators, E2 neighbours, a combining sequence and
    /// non-BMP text: a JSON parser reads each style's output back as the original.
    func testOutputParsesBackToTheOriginal() throws {
        var text = ""
        for scalar in 0..<0x80 { text.unicodeScalars.append(UnicodeScalar(UInt8(scalar))) }
        text += "\u{2028}\u{2029}\u{2027}\u{202A}👴🏻 é 漢字 🦊 </script>"
        for style in [JSONString.Style.log, .document] {
            var out: [UInt8] = []
            JSONString.appendQuoted(text, to: &out, style: style)
            XCTAssertFalse(out.contains { $0 < 0x20 }, "no raw control byte in \(style)")
            let parsed = try JSONSerialization.jsonObject(with: Data(out), options: [.fragmentsAllowed])
            XCTAssertEqual(parsed as? String, text, "\(style)")
        }
    }
}
