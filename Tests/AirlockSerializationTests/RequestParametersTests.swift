import AirlockSerialization
import XCTest

/// The parameter tree and the rule merging a route's parameters over a client's.
final class RequestParametersTests: XCTestCase {
    func testLiteralsBuildTheTree() {
        let value: ParameterValue = ["a": ["1", .null], "b": "x"]
        XCTAssertEqual(value, .dictionary(["a": .array([.string("1"), .null]), "b": .string("x")]))
        XCTAssertEqual(value.description, #"{"a": ["1", null], "b": "x"}"#)
    }

    func testKeysOnlyOneSideHasAreKept() {
        let merged = ParameterValue.merge(client: ["c": "1"], route: ["r": "2"])
        XCTAssertEqual(merged, ["c": "1", "r": "2"])
        XCTAssertEqual(ParameterValue.merge(client: [:], route: [:]), [:])
    }

    func testRouteValueWinsOnTheSameKey() {
        let merged = ParameterValue.merge(client: ["k": "client", "n": .null], route: ["k": "route", "n": "set"])
        XCTAssertEqual(merged, ["k": "route", "n": "set"])
        // A route's null is a value too: it overrides.
        XCTAssertEqual(ParameterValue.merge(client: ["k": "client"], route: ["k": .null]), ["k": .null])
    }

    func testArraysAreReplacedNotConcatenated() {
        let merged = ParameterValue.merge(client: ["ids": ["1", "2"]], route: ["ids": ["9"]])
        XCTAssertEqual(merged, ["ids": ["9"]])
    }

    func testDictionariesMergeRecursively() {
        let client: RequestParameters = ["auth": ["user": "ann", "token": "forged", "deep": ["x": "1"]], "q": "a"]
        let route: RequestParameters = ["auth": ["token": "secret", "deep": ["y": "2"]]]
        XCTAssertEqual(
            ParameterValue.merge(client: client, route: route),
            ["auth": ["user": "ann", "token": "secret", "deep": ["x": "1", "y": "2"]], "q": "a"])
    }

    func testShapeMismatchTakesTheRoutesValueWhole() {
        XCTAssertEqual(ParameterValue.merge(client: ["a": "1"], route: ["a": ["b": "2"]]), ["a": ["b": "2"]])
        XCTAssertEqual(ParameterValue.merge(client: ["a": ["b": "2"]], route: ["a": "1"]), ["a": "1"])
        XCTAssertEqual(ParameterValue.merge(client: ["a": ["1"]], route: ["a": ["b": "2"]]), ["a": ["b": "2"]])
    }

    func testMergingOnValues() {
        let client: ParameterValue = ["a": ["x": "1"]]
        XCTAssertEqual(client.merging(route: ["a": ["y": "2"]]), ["a": ["x": "1", "y": "2"]])
        XCTAssertEqual(client.merging(route: "s"), "s")
        XCTAssertEqual(ParameterValue.string("s").merging(route: ["a": "1"]), ["a": "1"])
    }
}
