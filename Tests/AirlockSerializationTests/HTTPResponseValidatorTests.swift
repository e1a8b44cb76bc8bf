import AirlockSerialization
import XCTest

/// AFHTTPResponseSerializer: status codes, content types, the empty-body rules and error chaining.
final class HTTPResponseValidatorTests: XCTestCase {
    private let htmlOnly = HTTPResponseValidator(acceptableContentTypes: ["text/html"])

    func testMIMETypeStripsParametersWhitespaceAndCase() {
        XCTAssertEqual(facts(200, "Application/JSON; charset=UTF-8").mimeType, "application/json")
        XCTAssertEqual(facts(200, "  text/HTML  ;charset=utf-8").mimeType, "text/html")
        XCTAssertEqual(facts(200, "\ttext/xml\t").mimeType, "text/xml")
        XCTAssertEqual(facts(200, "image/png").mimeType, "image/png")
        XCTAssertNil(facts(200, nil).mimeType)
        XCTAssertNil(facts(200, "").mimeType)
        XCTAssertNil(facts(200, " ; charset=utf-8").mimeType)
    }

    func testDefaultsAcceptAny2xxAndAnyContentType() {
        let validator = HTTPResponseValidator()
        XCTAssertFalse(validator.needsBody)
        XCTAssertEqual(validator.acceptableStatusCodes, .success)
        XCTAssertNil(validator.acceptableContentTypes)
        assertAccepted(validator.validate(head: facts(200, "application/octet-stream")))
        assertAccepted(validator.validate(head: facts(204, nil, bodyIsEmpty: true)))
        assertAccepted(validator.validate(head: facts(299, "text/whatever")))
    }

    func testUnacceptableStatusUsesTheStandardReasonPhrase() {
        let validator = HTTPResponseValidator()
        let error = assertRejected(
            validator.validate(head: facts(404, "text/html")), .unacceptableStatus, code: -1011,
            message: "Request failed: Not Found (404)")
        XCTAssertNil(error?.underlying)
        XCTAssertEqual(error?.failingURL, "http://origin.test/items")
        assertRejected(validator.validate(head: facts(500, nil)), .unacceptableStatus, code: -1011,
                       message: "Request failed: Internal Server Error (500)")
        assertRejected(validator.validate(head: facts(304, nil, bodyIsEmpty: true)), .unacceptableStatus,
                       code: -1011, message: "Request failed: Not Modified (304)")
    }

    func testCustomStatusCodes() throws {
        let validator = HTTPResponseValidator(acceptableStatusCodes: try StatusCodeSet(parsing: ["200", "404"]))
        assertAccepted(validator.validate(head: facts(404, "text/html")))
        assertRejected(validator.validate(head: facts(201, "text/html")), .unacceptableStatus, code: -1011,
                       message: "Request failed: Created (201)")
    }

    func testContentTypeComparesTheMIMETypeWithoutParametersCaseInsensitively() {
        assertAccepted(htmlOnly.validate(head: facts(200, "text/html")))
        assertAccepted(htmlOnly.validate(head: facts(200, "TEXT/HTML; charset=ISO-8859-1")))
        assertAccepted(htmlOnly.validate(head: facts(200, " Text/Html ;q=1")))
        let error = assertRejected(
            htmlOnly.validate(head: facts(200, "Application/JSON; charset=utf-8")), .unacceptableContentType,
            code: -1016, message: "Request failed: unacceptable content-type: application/json")
        XCTAssertNil(error?.underlying, "a content-type failure alone carries nothing underneath")
    }

    func testMissingContentTypeWithABodyIsUnacceptable() {
        assertRejected(htmlOnly.validate(head: facts(200, nil, bodyIsEmpty: false)), .unacceptableContentType,
                       code: -1016, message: "Request failed: unacceptable content-type: (none)")
        assertRejected(htmlOnly.validate(head: facts(200, nil), body: bytes("x")), .unacceptableContentType,
                       code: -1016)
    }

    func testEmptyBodyWithoutContentTypePasses() {
        // 205 Reset Content, no Content-Type, no body: valid even though only text/html is acceptable.
        let validator = HTTPResponseValidator(
            acceptableStatusCodes: StatusCodeSet(ranges: [200...299]), acceptableContentTypes: ["text/html"])
        assertAccepted(validator.validate(head: facts(205, nil, bodyIsEmpty: true)))
        assertAccepted(validator.validate(head: facts(205, nil), body: []))
    }

    func testEmptyBodyWithAMismatchedContentTypeIsNotAnError() {
        assertAccepted(htmlOnly.validate(head: facts(200, "application/json", bodyIsEmpty: true)))
        assertAccepted(htmlOnly.validate(head: facts(200, "application/json", bodyIsEmpty: nil), body: []),
                       "the full check judges emptiness by the body itself")
    }

    func testTheSame205WithABodyIsRejected() {
        assertRejected(htmlOnly.validate(head: facts(205, nil, bodyIsEmpty: false)), .unacceptableContentType,
                       code: -1016)
        assertRejected(htmlOnly.validate(head: facts(205, "application/json", bodyIsEmpty: true), body: bytes("{}")),
                       .unacceptableContentType, code: -1016)
    }

    func testUnknownBodyLengthCountsAsNonEmptyInHeadOnlyValidation() {
        assertRejected(htmlOnly.validate(head: facts(200, nil, bodyIsEmpty: nil)), .unacceptableContentType,
                       code: -1016)
        assertRejected(htmlOnly.validate(head: facts(200, "text/plain", bodyIsEmpty: nil)),
                       .unacceptableContentType, code: -1016)
    }

    func testWhenBothFailTheStatusErrorCarriesTheContentTypeError() {
        let error = assertRejected(
            htmlOnly.validate(head: facts(404, "application/json")), .unacceptableStatus, code: -1011,
            message: "Request failed: Not Found (404)")
        let underlying = error?.underlying
        XCTAssertEqual(underlying?.reason, .unacceptableContentType)
        XCTAssertEqual(underlying?.code, -1016)
        XCTAssertEqual(underlying?.message, "Request failed: unacceptable content-type: application/json")
        XCTAssertNil(underlying?.underlying)
        XCTAssertEqual(
            error?.description,
            "unacceptable-status (-1011): Request failed: Not Found (404); "
                + "underlying: unacceptable-content-type (-1016): Request failed: unacceptable content-type: application/json")
    }

    func testStatusFailureWithEmptyBodyHasNoContentTypeErrorUnderneath() {
        let error = assertRejected(
            htmlOnly.validate(head: facts(404, "application/json", bodyIsEmpty: true)), .unacceptableStatus,
            code: -1011)
        XCTAssertNil(error?.underlying)
    }

    func testBodyTooLarge() {
        let error = ValidationError.bodyTooLarge(limit: 4_194_304)
        XCTAssertEqual(error.reason, .bodyTooLarge)
        XCTAssertEqual(error.code, -1103)
        XCTAssertEqual(error.message, "Response body exceeds the limit of 4194304 bytes")
        XCTAssertNil(error.underlying)
    }

    func testRejectReasonsAreStableLabels() {
        XCTAssertEqual(RejectReason.unacceptableStatus.rawValue, "unacceptable-status")
        XCTAssertEqual(RejectReason.unacceptableContentType.rawValue, "unacceptable-content-type")
        XCTAssertEqual(RejectReason.invalidJSON.rawValue, "invalid-json")
        XCTAssertEqual(RejectReason.invalidXML.rawValue, "invalid-xml")
        XCTAssertEqual(RejectReason.invalidImage.rawValue, "invalid-image")
        XCTAssertEqual(RejectReason.bodyTooLarge.rawValue, "body-too-large")
    }
}
