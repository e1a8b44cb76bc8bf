import AirlockSerialization
import XCTest

/// Reading `application/x-www-form-urlencoded` bodies: pairs, decoding, nested keys, errors, limits.
final class FormURLEncodedParsingTests: XCTestCase {
    private func parse(_ text: String, limits: FormURLEncodedParsing.Limits = .init()) throws -> RequestParameters {
        try FormURLEncodedParsing.parse(Array(text.utf8), limits: limits)
    }

    /// Fails unless `text` is rejected with `reason`; returns the message.
    @discardableResult
    private func assertRejects(
        _ text: String, _ reason: String, limits: FormURLEncodedParsing.Limits = .init(),
        file: StaticString = #filePath, line: UInt = #line
    ) -> String? {
        do {
            let parsed = try FormURLEncodedParsing.parse(Array(text.utf8), limits: limits)
            XCTFail("expected \(reason), got \(parsed)", file: file, line: line)
            return nil
        } catch {
            XCTAssertEqual(error.reason, reason, "\(error)", file: file, line: line)
            XCTAssertFalse(error.message.isEmpty, file: file, line: line)
            return error.message
        }
    }

    func testPairsAndEmptyPairs() throws {
        XCTAssertEqual(try parse(""), [:])
        XCTAssertEqual(try parse("a=1&b=2"), ["a": "1", "b": "2"])
        XCTAssertEqual(try parse("&a=1&&b=2&"), ["a": "1", "b": "2"])
        XCTAssertEqual(try parse("a=&b=x=y"), ["a": "", "b": "x=y"])
    }

    func testBareKeyIsNull() throws {
        XCTAssertEqual(try parse("flag&k=v"), ["flag": .null, "k": "v"])
        XCTAssertEqual(try parse("a[]&a[]=1"), ["a": [.null, "1"]])
    }

    func testPlusAndPercentDecoding() throws {
        XCTAssertEqual(try parse("q=a+b%20c%2Bd&e%3D=%c3%a9%C3%A9"), ["q": "a b c+d", "e=": "éé"])
        XCTAssertEqual(try parse("k=%2520"), ["k": "%20"])
    }

    func testInvalidEscapesAreRejected() {
        for body in ["k=%", "k=%2", "k=%zz", "k=%2g&x=1", "%=1", "a=1&b=%G0"] {
            assertRejects(body, "invalid-form-body")
        }
        XCTAssertEqual(
            assertRejects("ab=1%2", "invalid-form-body"), "Form body has an invalid percent escape at byte 4")
    }

    func testInvalidUTF8IsRejected() {
        // A stray continuation byte, a cut 2-byte sequence, an overlong '/', a surrogate, a raw 0xFF.
        for body in ["k=%80", "k=%C3", "k=%C0%AF", "k=%ED%A0%80", "%FF=1"] {
            assertRejects(body, "invalid-form-body")
        }
        var raw = Array("k=".utf8)
        raw.append(0xFF)
        XCTAssertThrowsError(try FormURLEncodedParsing.parse(raw)) { error in
            XCTAssertEqual((error as? RequestSerializationError)?.reason, "invalid-form-body")
        }
    }

    func testNestedKeys() throws {
        XCTAssertEqual(try parse("a[b]=1"), ["a": ["b": "1"]])
        XCTAssertEqual(try parse("a[b]=1&a[c][d]=2"), ["a": ["b": "1", "c": ["d": "2"]]])
        XCTAssertEqual(try parse("a%5Bb%5D=1"), ["a": ["b": "1"]])
        XCTAssertEqual(try parse("a[b+c]=1"), ["a": ["b c": "1"]])
    }

    func testArrays() throws {
        XCTAssertEqual(try parse("a[]=1&a[]=2"), ["a": ["1", "2"]])
        XCTAssertEqual(try parse("a[]=2&x=0&a[]=1"), ["a": ["2", "1"], "x": "0"])
        XCTAssertEqual(try parse("a[b][]=1&a[b][]=2"), ["a": ["b": ["1", "2"]]])
    }

    func testArrayOfDictionariesFillsTheLastElementUntilAKeyRepeats() throws {
        XCTAssertEqual(
            try parse("a[][b]=1&a[][c]=2&a[][b]=3"),
            ["a": [["b": "1", "c": "2"], ["b": "3"]]])
        XCTAssertEqual(
            try parse("a[][b][c]=1&a[][b][d]=2&a[][b][c]=3"),
            ["a": [["b": ["c": "1", "d": "2"]], ["b": ["c": "3"]]]])
        // A shape the last element cannot take starts a new element instead of failing.
        XCTAssertEqual(try parse("a[][b]=1&a[][b][c]=2"), ["a": [["b": "1"], ["b": ["c": "2"]]]])
    }

    func testMalformedBracketKeysAreFlat() throws {
        XCTAssertEqual(
            try parse("[a]=1&a[b=2&a[b]c=3&a[[b]]=4&a]=5&a[[b]=6"),
            ["[a]": "1", "a[b": "2", "a[b]c": "3", "a[[b]]": "4", "a]": "5", "a[[b]": "6"])
    }

    func testLastPlainValueWins() throws {
        XCTAssertEqual(try parse("a=1&a=2"), ["a": "2"])
        XCTAssertEqual(try parse("a=1&a"), ["a": .null])
        XCTAssertEqual(try parse("a[b]=1&a[b]=2"), ["a": ["b": "2"]])
    }

    func testConflictingShapesAreRejected() {
        for body in ["a=1&a[b]=2", "a[b]=2&a=1", "a[]=1&a[b]=2", "a[b]=1&a[]=2", "a[b]=1&a[b][c]=2", "a[]=1&a=2", "a&a[]=1"] {
            assertRejects(body, "conflicting-form-keys")
        }
        XCTAssertEqual(
            assertRejects("a=1&a[b]=2", "conflicting-form-keys"),
            "Form key 'a[b]' is used both as a value and as a list or a dictionary")
    }

    func testDepthLimit() throws {
        let limit = FormURLEncodedParsing.Limits().maxDepth
        XCTAssertEqual(limit, 32)
        let atLimit = "a" + String(repeating: "[k]", count: limit) + "=1"
        var expected: ParameterValue = "1"
        for _ in 0..<limit { expected = ["k": expected] }
        XCTAssertEqual(try parse(atLimit), ["a": expected])
        assertRejects("a" + String(repeating: "[k]", count: limit + 1) + "=1", "form-too-deep")
        assertRejects("a" + String(repeating: "[]", count: 5000) + "=1", "form-too-deep")
        assertRejects("a[b][c]=1", "form-too-deep", limits: .init(maxDepth: 1))
    }

    func testPairLimit() throws {
        let limit = FormURLEncodedParsing.Limits().maxPairs
        XCTAssertEqual(limit, 1_000)
        let atLimit = (0..<limit).map { "k\($0)=v" }.joined(separator: "&")
        XCTAssertEqual(try parse(atLimit + "&&").count, limit)
        XCTAssertEqual(assertRejects(atLimit + "&x", "form-too-many-pairs"), "Form body has more than 1000 pairs")
        assertRejects("a[]=1&a[]=2&a[]=3", "form-too-many-pairs", limits: .init(maxPairs: 2))
    }

    func testReadsBackWhatQueryStringEncodingWrites() throws {
        let parameters: RequestParameters = [
            "key": "value&", "space": "a b+c", "empty": "", "flag": .null, "emoji": "👴🏻👮🏽 /?%20",
            "list": ["2", "1", .null], "nested": ["x": ["y": "1", "z": ["3", "4"]], "w": "2"],
            "rows": [["id": "1", "name": "a"], ["id": "2"]],
        ]
        XCTAssertEqual(try parse(QueryStringEncoding.encode(parameters)), parameters)
    }
}
