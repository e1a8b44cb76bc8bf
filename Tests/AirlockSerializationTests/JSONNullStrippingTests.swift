import AirlockSerialization
import XCTest

/// `removesKeysWithNullValues`: null members and null array elements go, everything else stays.
final class JSONNullStrippingTests: XCTestCase {
    private func stripped(_ text: String) -> String {
        String(decoding: JSONValidation.removingNulls(bytes(text)), as: UTF8.self)
    }

    func testAFNetworkingExampleByteExact() {
        let input = #"{"key":"value","nullkey":null,"array":[{"subnullkey":null}],"arrayWithNulls":[null]}"#
        XCTAssertEqual(
            JSONValidation.removingNulls(bytes(input)),
            bytes(#"{"key":"value","array":[{}],"arrayWithNulls":[]}"#))
    }

    func testNestedObjectsAndArrays() {
        XCTAssertEqual(stripped(#"{"a":{"b":{"c":null,"d":1},"e":null},"f":[[null,2],[null],{"g":null}]}"#),
                       #"{"a":{"b":{"d":1}},"f":[[2],[],{}]}"#)
        XCTAssertEqual(stripped("[null,null,1,null]"), "[1]")
        XCTAssertEqual(stripped(#"{"only":null}"#), "{}")
        XCTAssertEqual(stripped(#"{"first":null,"second":2}"#), #"{"second":2}"#, "no comma is left dangling")
    }

    func testStringsContainingNullAreKept() {
        XCTAssertEqual(stripped(#"{"null":"null","k":"a null \"null\" here","n":null}"#),
                       #"{"null":"null","k":"a null \"null\" here"}"#)
        XCTAssertEqual(stripped(#"["null",null,"\\",null]"#), #"["null","\\"]"#)
    }

    func testOtherScalarsAreCopiedByteForByte() {
        let input = #"{"n":-0.5e+10,"t":true,"f":false,"s":"\u00e9\ud83d\ude00é","z":0,"e":[],"o":{}}"#
        XCTAssertEqual(stripped(input), input)
    }

    func testWhitespaceIsDropped() {
        XCTAssertEqual(stripped("{ \"a\" : [ 1 , null , \"x y\" ] ,\n \"b\" : null }\n"), #"{"a":[1,"x y"]}"#)
    }

    func testTopLevelScalarsIncludingNullStay() {
        XCTAssertEqual(stripped("null"), "null")
        XCTAssertEqual(stripped(" 42 "), "42")
        XCTAssertEqual(stripped(#""null""#), #""null""#)
    }

    func testInvalidInputIsReturnedUnchanged() {
        XCTAssertEqual(stripped(#"{"a":null,}"#), #"{"a":null,}"#)
        XCTAssertEqual(stripped("[null"), "[null")
    }
}
