import Foundation
import XCTest
@testable import Airlock

/// The JSON body of an error response escapes its strings as every other JSON document Airlock
/// writes (AirlockWire's `JSONString`, `.document` style), and parses back to the same strings.
final class GatewayErrorBodyTests: XCTestCase {
    func testStringsAreEscapedAsJSONDocumentsAre() throws {
        let message = "bad \"name\" \\ tab\t nl\n bs\u{8} ff\u{C} nul\u{0} del\u{7F} ls\u{2028}ps\u{2029} é"
        let error = GatewayError(.noRoute, status: 403, message: message, source: .client)
        let body = String(decoding: error.jsonBody(requestID: "id\u{2028}1"), as: UTF8.self)
        XCTAssertTrue(body.hasSuffix("}\n"), body)
        for escaped in [#"\"name\""#, #" \\ "#, #"\t"#, #"\n"#, #"\b"#, #"\f"#, #"\u0000"#, #"\u2028"#, #"\u2029"#,
                        #""request_id":"id\u20281""#] {
            XCTAssertTrue(body.contains(escaped), "missing \(escaped) in \(body)")
        }
        for raw in ["\u{2028}", "\u{2029}", "\u{8}", "\u{0}"] {
            XCTAssertFalse(body.contains(raw), "raw U+\(String(raw.unicodeScalars.first!.value, radix: 16)) in \(body)")
        }
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(fields["error"] as? String, "no-route")
        XCTAssertEqual(fields["message"] as? String, message)
        XCTAssertEqual(fields["request_id"] as? String, "id\u{2028}1")
    }
}
