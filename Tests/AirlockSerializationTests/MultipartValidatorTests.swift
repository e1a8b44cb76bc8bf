import AirlockSerialization
import XCTest

/// `MultipartBoundary` and `MultipartValidator`: every body is fed whole, split in two at every
/// byte position, and one byte at a time, and must give the same verdict each way.
final class MultipartValidatorTests: XCTestCase {
    private static let contentType = "multipart/form-data; boundary=XyZ-b0undary"
    private static let b = "XyZ-b0undary"

    // MARK: - Boundary

    func testBoundaryFromTokenQuotedAndAnyCase() throws {
        XCTAssertEqual(try MultipartBoundary(contentType: Self.contentType).description, Self.b)
        XCTAssertEqual(try MultipartBoundary(contentType: "Multipart/Form-Data;BOUNDARY=abc").description, "abc")
        XCTAssertEqual(
            try MultipartBoundary(contentType: " multipart/form-data ; charset=utf-8; boundary=\"a b:c?=()'\" ; x=\"y;z\"")
                .description,
            "a b:c?=()'")
        let seventy = String(repeating: "7", count: 70)
        XCTAssertEqual(try MultipartBoundary(contentType: "multipart/form-data; boundary=\(seventy)").bytes.count, 70)
    }

    func testBoundaryErrors() {
        assertBoundaryError("multipart/form-data", "multipart-no-boundary")
        assertBoundaryError("multipart/form-data; charset=utf-8", "multipart-no-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"\"", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\(String(repeating: "7", count: 71))", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"ab \"", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"a@b\"", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=a@b", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=a; boundary=a", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"abc", "multipart-bad-boundary")
        assertBoundaryError("multipart/mixed; boundary=abc", "multipart-not-form-data")
        assertBoundaryError("text/plain", "multipart-not-form-data")
    }

    func testIsFormData() {
        XCTAssertTrue(MultipartBoundary.isFormData(contentType: "multipart/form-data"))
        XCTAssertTrue(MultipartBoundary.isFormData(contentType: "MULTIPART/form-DATA ; boundary=x"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "multipart/form-datax"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "multipart/form-data@x"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "multipart/mixed; boundary=x"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "application/x-www-form-urlencoded"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: ""))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: nil))
    }

    private func assertBoundaryError(_ contentType: String, _ reason: String, line: UInt = #line) {
        do {
            let boundary = try MultipartBoundary(contentType: contentType)
            XCTFail("\(contentType): expected \(reason), got boundary \(boundary)", line: line)
        } catch {
            XCTAssertEqual(error.reason, reason, "\(contentType): \(error.message)", line: line)
        }
    }
}
