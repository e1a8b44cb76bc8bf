import AirlockSerialization
import XCTest

/// Parameters written as JSON: shapes, sorted keys, string escapes, and validity.
final class ParameterJSONEncodingTests: XCTestCase {
    private func json(_ value: ParameterValue) -> String {
        String(decoding: ParameterJSONEncoding.encode(value), as: UTF8.self)
    }

    func testShapes() {
        XCTAssertEqual(json(.null), "null")
        XCTAssertEqual(json("x"), #""x""#)
        XCTAssertEqual(json([]), "[]")
        XCTAssertEqual(json([:]), "{}")
        XCTAssertEqual(json(["a": ["1", .null, ["b": []]]]), #"{"a":["1",null,{"b":[]}]}"#)
        XCTAssertEqual(
            String(decoding: ParameterJSONEncoding.encode(["k": "v"] as RequestParameters), as: UTF8.self),
            #"{"k":"v"}"#)
    }

    func testKeysAreSortedLikeCompare() {
        XCTAssertEqual(
            json(["b": "1", "B": "2", "a": ["z": "", "y": ""], "\u{FF21}": "", "😀": ""]),
            #"{"B":"2","a":{"y":"","z":""},"b":"1","😀":"","Ａ":""}"#)
    }

    func testStringEscapes() {
        XCTAssertEqual(json(#"q"b\s/"#), #""q\"b\\s/""#)
        XCTAssertEqual(json("\u{8}\u{C}\n\r\t"), #""\b\f\n\r\t""#)
        XCTAssertEqual(json("\u{0}\u{1}\u{1F}\u{7F}"), #""\u0000\u0001\u001f\#u{7F}""#)
        XCTAssertEqual(json("a\u{2028}b\u{2029}c"), #""a\u2028b\u2029c""#)
        // Neighbours of U+2028/2029 sharing their first two bytes stay literal.
        XCTAssertEqual(json("\u{2027}\u{202A}\u{2000}é😀"), "\"\u{2027}\u{202A}\u{2000}é😀\"")
        XCTAssertEqual(json("\u{E2}"), "\"\u{E2}\"")
    }

    func testEveryControlCharacterIsEscaped() {
        for scalar in 0..<0x20 {
            let out = json(.string(String(UnicodeScalar(UInt8(scalar)))))
            XCTAssertTrue(out.hasPrefix("\"\\"), "U+\(scalar): \(out)")
            XCTAssertTrue(out.utf8.allSatisfy { $0 >= 0x20 }, "U+\(scalar): \(out)")
        }
    }

    func testOutputIsValidJSON() {
        var strings: String = ""
        for scalar in 0..<0x80 { strings.unicodeScalars.append(UnicodeScalar(UInt8(scalar))) }
        let value: ParameterValue = ["all": .string(strings + "\u{2028}👴🏻"), "n": .null, "l": [["x": ["y"]]]]
        XCTAssertNil(checkJSON(ParameterJSONEncoding.encode(value)))
    }
}
