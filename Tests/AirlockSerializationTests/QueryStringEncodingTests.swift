import AirlockSerialization
import XCTest

/// `AFQueryStringFromParameters` and `AFPercentEscapedStringFromString`, with the examples of
/// AFNetworking's own tests (AFHTTPRequestSerializationTests) and issue #13.
final class QueryStringEncodingTests: XCTestCase {
    func testReservedCharactersAreEscapedButSlashAndQuestionMarkStay() {
        XCTAssertEqual(
            QueryStringEncoding.percentEscaped(" :#[]@!$&'()*+,;=/?"),
            "%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
    }

    func testUnreservedCharactersStayLiteral() {
        let unreserved = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
        XCTAssertEqual(QueryStringEncoding.percentEscaped(unreserved), unreserved)
    }

    func testEveryOtherASCIICharacterIsEscapedWithUppercaseHex() {
        for byte in UInt8(0)...0x7F {
            let character = String(UnicodeScalar(byte))
            let literal = (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || "-._~/?".utf8.contains(byte)
            let expected = literal ? character : "%" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            XCTAssertEqual(QueryStringEncoding.percentEscaped(character), expected, "byte \(byte)")
        }
    }

    func testSpaceAndExistingEscapes() {
        XCTAssertEqual(QueryStringEncoding.percentEscaped("a b"), "a%20b")
        XCTAssertEqual(QueryStringEncoding.percentEscaped("%20"), "%2520")
        XCTAssertEqual(QueryStringEncoding.percentEscaped("é"), "%C3%A9")
        XCTAssertEqual(QueryStringEncoding.percentEscaped("e\u{301}"), "e%CC%81")
    }

    func testLongEmojiStringRoundTripsUnsplit() {
        // Emoji with skin-tone modifiers and ZWJ sequences, long enough to cross AF's 50-unit batches
        // at odd offsets.
        let input = String(repeating: "👴🏻👮🏽", count: 30) + "a" + String(repeating: "👨‍👩‍👧‍👦🇫🇷", count: 20)
        let escaped = QueryStringEncoding.percentEscaped(input)
        XCTAssertTrue(escaped.utf8.allSatisfy { $0 < 0x80 })
        XCTAssertEqual(percentDecoded(escaped), input)
        // Every scalar is written whole: 4-byte scalars as four escapes in a row.
        XCTAssertTrue(escaped.hasPrefix("%F0%9F%91%B4%F0%9F%8F%BB%F0%9F%91%AE%F0%9F%8F%BD"))
    }

    func testSimpleParameters() {
        XCTAssertEqual(QueryStringEncoding.encode(["key": "value"]), "key=value")
        XCTAssertEqual(QueryStringEncoding.encode(["key": "value", "key1": "value&"]), "key=value&key1=value%26")
        XCTAssertEqual(QueryStringEncoding.encode([:]), "")
    }

    func testKeysSortCaseSensitivelyLikeCompare() {
        XCTAssertEqual(
            QueryStringEncoding.encode(["b": "1", "B": "2", "a": "3", "Z": "4", "a1": "5", "_": "6"]),
            "B=2&Z=4&_=6&a=3&a1=5&b=1")
        // -[NSString compare:] orders UTF-16 code units: a key beyond the BMP (surrogates D83D…)
        // sorts before U+FF21, unlike Swift's scalar order.
        XCTAssertEqual(QueryStringEncoding.encode(["\u{FF21}": "1", "😀": "2"]), "%F0%9F%98%80=2&%EF%BC%A1=1")
    }

    func testNestedDictionariesEscapeTheirBrackets() {
        XCTAssertEqual(QueryStringEncoding.encode(["a": ["b": "1"]]), "a%5Bb%5D=1")
        XCTAssertEqual(
            QueryStringEncoding.encode(["a": ["c": ["d": "2"], "b": "1"]]),
            "a%5Bb%5D=1&a%5Bc%5D%5Bd%5D=2")
    }

    func testArraysKeepTheirOrder() {
        XCTAssertEqual(QueryStringEncoding.encode(["a": ["1", "2"]]), "a%5B%5D=1&a%5B%5D=2")
        XCTAssertEqual(QueryStringEncoding.encode(["a": ["2", "1"]]), "a%5B%5D=2&a%5B%5D=1")
        XCTAssertEqual(
            QueryStringEncoding.encode(["a": [["b": "1", "c": "2"], ["1"]]]),
            "a%5B%5D%5Bb%5D=1&a%5B%5D%5Bc%5D=2&a%5B%5D%5B%5D=1")
    }

    func testNullIsTheBareKey() {
        XCTAssertEqual(QueryStringEncoding.encode(["flag": .null, "k": "v"]), "flag&k=v")
        XCTAssertEqual(QueryStringEncoding.encode(["a b": .null]), "a%20b")
        XCTAssertEqual(QueryStringEncoding.encode(["a": [.null]]), "a%5B%5D")
        // AF joins pairs, so an empty first pair still gets its separator.
        XCTAssertEqual(QueryStringEncoding.encode(["": .null, "b": "1"]), "&b=1")
    }

    func testEmptyContainersWriteNothing() {
        XCTAssertEqual(QueryStringEncoding.encode(["a": [], "b": [:], "c": "1"]), "c=1")
        XCTAssertEqual(QueryStringEncoding.encode(["k": ""]), "k=")
    }

    func testDeepNesting() {
        var value: ParameterValue = "x"
        for _ in 0..<100 { value = ["k": value] }
        let encoded = QueryStringEncoding.encode(["r": value])
        XCTAssertEqual(encoded, "r" + String(repeating: "%5Bk%5D", count: 100) + "=x")
    }
}

/// Percent-decodes `text` (no `+` handling); nil on a bad escape or bad UTF-8.
func percentDecoded(_ text: String) -> String? {
    var out: [UInt8] = []
    var bytes = Array(text.utf8)[...]
    while let byte = bytes.popFirst() {
        guard byte == UInt8(ascii: "%") else { out.append(byte); continue }
        guard bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
        else { return nil }
        out.append(value)
        bytes = bytes.dropFirst(2)
    }
    // (String(validating:as:) needs macOS 15; the package supports 14.)
    let text = String(decoding: out, as: UTF8.self)
    return Array(text.utf8) == out ? text : nil
}
