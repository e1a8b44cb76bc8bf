import AirlockSerialization
import XCTest

/// Acceptable status codes: ranges, membership, and parsing config entries with their keys.
final class StatusCodeSetTests: XCTestCase {
    func testSuccessIsExactly2xx() {
        XCTAssertFalse(StatusCodeSet.success.contains(199))
        XCTAssertTrue(StatusCodeSet.success.contains(200))
        XCTAssertTrue(StatusCodeSet.success.contains(250))
        XCTAssertTrue(StatusCodeSet.success.contains(299))
        XCTAssertFalse(StatusCodeSet.success.contains(300))
        XCTAssertFalse(StatusCodeSet.success.contains(404))
    }

    func testRangesAreSortedAndMerged() {
        let set = StatusCodeSet(ranges: [404...404, 200...204, 205...299, 250...260])
        XCTAssertEqual(set.ranges, [200...299, 404...404])
        XCTAssertEqual(set, StatusCodeSet(ranges: [200...299, 404...404]))
        XCTAssertEqual(set.description, "200-299, 404")
        XCTAssertTrue(set.contains(404))
        XCTAssertFalse(set.contains(403))
        XCTAssertFalse(set.contains(405))
    }

    func testParsesIntegersRangesAndSingleCodeStrings() throws {
        let set = try StatusCodeSet(parsing: ["200-299", "304", "404", " 410 ", "500 - 503"])
        XCTAssertEqual(set.ranges, [200...299, 304...304, 404...404, 410...410, 500...503])
        XCTAssertTrue(set.contains(503))
        XCTAssertFalse(set.contains(504))
        XCTAssertFalse(set.contains(305))
    }

    func testParsedBoundsAreInclusive() throws {
        let set = try StatusCodeSet(parsing: ["100-599"])
        XCTAssertTrue(set.contains(100))
        XCTAssertTrue(set.contains(599))
        XCTAssertFalse(set.contains(99))
        XCTAssertFalse(set.contains(600))
    }

    func testEachBadEntryIsNamedByIndex() {
        let cases: [(entries: [String], key: String, fragment: String)] = [
            (["200", "abc"], "acceptable_status_codes[1]", "not a status code"),
            (["600"], "acceptable_status_codes[0]", "600 is outside 100...599"),
            (["99"], "acceptable_status_codes[0]", "99 is outside"),
            (["200", "300", "250-650"], "acceptable_status_codes[2]", "650 is outside"),
            (["299-200"], "acceptable_status_codes[0]", "ends before it starts"),
            (["200-"], "acceptable_status_codes[0]", "not a status code"),
            (["-5"], "acceptable_status_codes[0]", "not a status code"),
            (["200", ""], "acceptable_status_codes[1]", "not a status code"),
            (["2 00"], "acceptable_status_codes[0]", "not a status code"),
            (["200-250-299"], "acceptable_status_codes[0]", "not a status code"),
            (["20x"], "acceptable_status_codes[0]", "not a status code"),
            (["404.0"], "acceptable_status_codes[0]", "not a status code"),
            (["99999999999999999999"], "acceptable_status_codes[0]", "not a status code"),
        ]
        for (entries, key, fragment) in cases {
            let message = assertConfigError(key) { () throws(ValidationConfigError) in
                try StatusCodeSet(parsing: entries)
            }
            XCTAssertTrue(message?.contains(fragment) == true, "\(entries): \(message ?? "no error")")
        }
    }

    func testEmptyListIsRejected() {
        assertConfigError("acceptable_status_codes") { () throws(ValidationConfigError) in
            try StatusCodeSet(parsing: [])
        }
    }
}
