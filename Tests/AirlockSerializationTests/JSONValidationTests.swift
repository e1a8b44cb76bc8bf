import AirlockSerialization
import XCTest

/// Strict RFC 8259 checking: every value type at top level, and a battery of invalid documents.
final class JSONValidationTests: XCTestCase {
    private func assertValid(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(checkJSON(text), "\(text.debugDescription) should be valid", file: file, line: line)
    }

    /// Asserts the document is rejected, and that the description names `fragment` and byte `offset`.
    private func assertInvalid(
        _ bytes: [UInt8], _ fragment: String, offset: Int, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let error = checkJSON(bytes) else {
            XCTFail("\(String(decoding: bytes, as: UTF8.self).debugDescription) should be invalid", file: file, line: line)
            return
        }
        XCTAssertTrue(error.contains(fragment), "\(error) should mention \(fragment)", file: file, line: line)
        XCTAssertTrue(error.hasSuffix("at byte \(offset)"), "\(error) should point at byte \(offset)", file: file, line: line)
    }

    private func assertInvalid(
        _ text: String, _ fragment: String, offset: Int, file: StaticString = #filePath, line: UInt = #line
    ) {
        assertInvalid(Array(text.utf8), fragment, offset: offset, file: file, line: line)
    }

    func testEveryValueTypeIsAcceptedAtTopLevel() {
        assertValid(#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#)
        assertValid("[1, 2, 3]")
        assertValid(#""just a string""#)
        assertValid("42")
        assertValid("true")
        assertValid("false")
        assertValid("null")
        assertValid("{}")
        assertValid("[]")
    }

    func testWhitespaceAroundAndInside() {
        assertValid(" \t\r\n{ \"a\" : [ 1 , 2 ] }\n")
        assertValid("\n  null  \n")
    }

    func testNumbersPerTheGrammar() {
        for number in ["0", "-0", "7", "-12", "1.5", "-0.25", "1e10", "1E+2", "1e-2", "0.5e07", "123456789012345678901234567890"] {
            assertValid(number)
            assertValid("[\(number)]")
        }
    }

    func testStringEscapesAndUnicode() {
        assertValid(#""\" \\ \/ \b \f \n \r \t""#)
        assertValid(#""\u00e9\u00E9\u0000""#)
        assertValid(#""\ud83d\ude00""#)  // a surrogate pair (😀)
        assertValid("\"é 中 😀\"")  // raw 2-, 3- and 4-byte UTF-8
        assertValid("\"\u{7F}\"")  // DEL needs no escape
    }

    func testNestingUpToTheLimit() {
        let depth = JSONValidation.maximumDepth
        XCTAssertEqual(depth, 512)
        assertValid(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        assertValid(String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth))
        assertInvalid(String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1),
                      "nesting deeper than 512", offset: depth)
        assertInvalid(String(repeating: #"{"a":"#, count: depth + 1) + "1" + String(repeating: "}", count: depth + 1),
                      "nesting deeper than 512", offset: 5 * depth)
    }

    func testInvalidDocuments() {
        assertInvalid("", "no JSON value", offset: 0)
        assertInvalid("   ", "no JSON value", offset: 3)
        assertInvalid("{invalid}", "unexpected 'i' where an object key was expected", offset: 1)
        assertInvalid("{'a':1}", "unexpected ''' where an object key was expected", offset: 1)
        assertInvalid(#"{"a":1,}"#, "trailing comma", offset: 7)
        assertInvalid("[1,2,]", "trailing comma", offset: 5)
        assertInvalid("[1 2]", "where ',' or ']' was expected", offset: 3)
        assertInvalid(#"{"a" 1}"#, "where ':' was expected", offset: 5)
        assertInvalid(#"{"a":1"#, "unexpected end of input", offset: 6)
        assertInvalid("[", "unexpected end of input", offset: 1)
        assertInvalid("]", "where a value was expected", offset: 0)
        assertInvalid("[,1]", "where a value was expected", offset: 1)
    }

    func testInvalidNumbers() {
        assertInvalid("01", "leading zero", offset: 0)
        assertInvalid("[-01]", "leading zero", offset: 2)
        assertInvalid("1.", "fraction digit", offset: 2)
        assertInvalid("1.e5", "fraction digit", offset: 2)
        assertInvalid(".5", "unexpected '.'", offset: 0)
        assertInvalid("+1", "unexpected '+'", offset: 0)
        assertInvalid("-", "where a digit was expected", offset: 1)
        assertInvalid("-a", "where a digit was expected", offset: 1)
        assertInvalid("1e", "exponent digit", offset: 2)
        assertInvalid("1e+", "exponent digit", offset: 3)
        assertInvalid("0x10", "after the JSON value", offset: 1)
        assertInvalid("NaN", "unexpected 'N'", offset: 0)
        assertInvalid("[Infinity]", "unexpected 'I'", offset: 1)
        assertInvalid("-Infinity", "where a digit was expected", offset: 1)
    }

    func testInvalidLiterals() {
        assertInvalid("tru", "invalid literal", offset: 0)
        assertInvalid("True", "unexpected 'T'", offset: 0)
        assertInvalid("[nul]", "invalid literal", offset: 1)
        assertInvalid("nulls", "after the JSON value", offset: 4)
    }

    func testInvalidStrings() {
        assertInvalid("\"a\u{01}b\"", "unescaped control character 0x01", offset: 2)
        assertInvalid("\"tab\there\"", "unescaped control character 0x09", offset: 4)
        assertInvalid("\"line\nbreak\"", "unescaped control character 0x0A", offset: 5)
        assertInvalid(#""unterminated"#, "unterminated string", offset: 0)
        assertInvalid(#"["a\"]"#, "unterminated string", offset: 1)
        assertInvalid(#""\x""#, "invalid escape", offset: 1)
        assertInvalid(#""\u12""#, #"invalid \u escape"#, offset: 1)
        assertInvalid(#""\u12G4""#, #"invalid \u escape"#, offset: 1)
        assertInvalid(#""\ud83d""#, "without a low surrogate", offset: 1)
        assertInvalid(#""\ud83dx""#, "without a low surrogate", offset: 1)
        assertInvalid(#""\ud83d\u0041""#, "without a low surrogate", offset: 1)
        assertInvalid(#""\ude00""#, "lone low surrogate", offset: 1)
        assertInvalid(#""\ud83d\ud83d""#, "without a low surrogate", offset: 1)
    }

    /// Long strings are scanned eight bytes at a time: each special byte must be caught at every offset.
    func testSpecialBytesAtEveryPositionOfALongString() {
        for position in 0..<24 {
            let prefix = [UInt8](repeating: UInt8(ascii: "a"), count: position)
            let suffix = [UInt8](repeating: UInt8(ascii: "b"), count: 24 - position)
            let quoted = { (inner: [UInt8]) in [0x22] + prefix + inner + suffix + [0x22] }
            XCTAssertNil(checkJSON(quoted([])), "plain, \(position)")
            XCTAssertNil(checkJSON(quoted(bytes(#"\n"#))), "escape at \(position)")
            XCTAssertNil(checkJSON(quoted(bytes(#"\""#))), "escaped quote at \(position)")
            XCTAssertNil(checkJSON(quoted(bytes("é"))), "2-byte UTF-8 at \(position)")
            XCTAssertNil(checkJSON(quoted([0x7F])), "DEL at \(position)")
            assertInvalid(quoted([0x1F]), "unescaped control character 0x1F", offset: 1 + position)
            assertInvalid(quoted([0x00]), "unescaped control character 0x00", offset: 1 + position)
            assertInvalid(quoted([0xFE]), "invalid UTF-8", offset: 1 + position)
            assertInvalid(quoted(bytes(#"\q"#)), "invalid escape", offset: 1 + position)
            assertInvalid([0x22] + prefix + [0x22] + suffix + [0x22], "after the JSON value", offset: 2 + position)
        }
    }

    func testInvalidUTF8() {
        let quoted = { (inner: [UInt8]) in [0x22] + inner + [0x22] }
        assertInvalid(quoted([0xFF]), "invalid UTF-8", offset: 1)
        assertInvalid(quoted([0x80]), "invalid UTF-8", offset: 1)  // stray continuation byte
        assertInvalid(quoted([0xC0, 0xAF]), "invalid UTF-8", offset: 1)  // overlong '/'
        assertInvalid(quoted([0xE0, 0x80, 0xAF]), "invalid UTF-8", offset: 1)  // overlong 3-byte
        assertInvalid(quoted([0xED, 0xA0, 0x80]), "invalid UTF-8", offset: 1)  // encoded surrogate U+D800
        assertInvalid(quoted([0xF4, 0x90, 0x80, 0x80]), "invalid UTF-8", offset: 1)  // above U+10FFFF
        assertInvalid(quoted([0x61, 0xE4, 0xB8]), "invalid UTF-8", offset: 2)  // truncated sequence
        assertInvalid([0x22, 0xC3], "invalid UTF-8", offset: 1)  // cut off by the end
        assertInvalid([0xEF, 0xBB, 0xBF] + bytes("{}"), "unexpected 0xEF", offset: 0)  // no BOM
        assertInvalid([0xC3, 0xA9], "unexpected 0xC3", offset: 0)  // non-ASCII outside a string
    }

    func testTwoTopLevelValues() {
        assertInvalid("{} {}", "unexpected '{' after the JSON value", offset: 3)
        assertInvalid("1 2", "after the JSON value", offset: 2)
        assertInvalid(#""a""b""#, "after the JSON value", offset: 3)
        assertInvalid("[]x", "unexpected 'x' after the JSON value", offset: 2)
    }

    func testWorksOnASliceOfALargerBuffer() {
        let buffer = bytes("xx[1,2]yy")
        buffer.withUnsafeBytes { raw in
            XCTAssertNil(JSONValidation.check(UnsafeRawBufferPointer(rebasing: raw[2..<7])))
            XCTAssertNotNil(JSONValidation.check(UnsafeRawBufferPointer(rebasing: raw[2..<8])))
        }
    }
}
