import AirlockSerialization
import XCTest

/// The JSON, XML and image validators: defaults, the base checks first, then the body.
final class BodyValidatorTests: XCTestCase {
    // MARK: JSON

    func testJSONDefaults() {
        let validator = JSONResponseValidator()
        XCTAssertTrue(validator.needsBody)
        XCTAssertFalse(validator.removesKeysWithNullValues)
        XCTAssertEqual(validator.base.acceptableStatusCodes, .success)
        XCTAssertEqual(validator.base.acceptableContentTypes, ["application/json", "text/json", "text/javascript"])
    }

    func testJSONAcceptsValidBodiesOfEveryDefaultType() {
        let validator = JSONResponseValidator()
        for type in ["application/json", "text/json", "text/javascript", "Application/JSON; charset=utf-8"] {
            assertAccepted(validator.validate(head: facts(200, type), body: bytes(#"{"a":[1,null]}"#)), type)
        }
        assertAccepted(validator.validate(head: facts(200, "application/json"), body: bytes("\"text\"")))
    }

    func testJSONRejectsOtherContentTypes() {
        let validator = JSONResponseValidator()
        assertRejected(validator.validate(head: facts(200, "text/html"), body: bytes("{}")),
                       .unacceptableContentType, code: -1016,
                       message: "Request failed: unacceptable content-type: text/html")
        assertRejected(validator.validate(head: facts(200, "text/html", bodyIsEmpty: nil)),
                       .unacceptableContentType, code: -1016, message: nil)
    }

    func testJSONHeadOnlyCheckPassesBeforeTheBodyIsRead() {
        assertAccepted(JSONResponseValidator().validate(head: facts(200, "application/json", bodyIsEmpty: nil)))
    }

    func testJSONEmptyBodyAndSingleSpaceAreValidNothing() {
        let validator = JSONResponseValidator()
        assertAccepted(validator.validate(head: facts(200, "application/json"), body: []))
        assertAccepted(validator.validate(head: facts(200, "application/json"), body: bytes(" ")))
        assertAccepted(validator.validate(head: facts(204, nil), body: []), "no type, no body")
        assertRejected(validator.validate(head: facts(200, "application/json"), body: bytes("  ")),
                       .invalidJSON, code: -1017, message: "Response body is not valid JSON: no JSON value at byte 2")
    }

    func testInvalidJSONBody() {
        let error = assertRejected(
            JSONResponseValidator().validate(head: facts(200, "application/json"), body: bytes("{invalid}")),
            .invalidJSON, code: -1017,
            message: "Response body is not valid JSON: unexpected 'i' where an object key was expected at byte 1")
        XCTAssertNil(error?.underlying)
    }

    func testJSONStatusFailureComesBeforeTheBody() {
        let error = assertRejected(
            JSONResponseValidator().validate(head: facts(500, "text/html"), body: bytes("<html>")),
            .unacceptableStatus, code: -1011, message: "Request failed: Internal Server Error (500)")
        XCTAssertEqual(error?.underlying?.reason, .unacceptableContentType)
    }

    func testJSONNullStrippingReplacesTheBody() {
        let validator = JSONResponseValidator(removesKeysWithNullValues: true)
        let input = #"{"key":"value","nullkey":null,"array":[{"subnullkey":null}],"arrayWithNulls":[null]}"#
        assertAccepted(validator.validate(head: facts(200, "application/json"), body: bytes(input)),
                       body: bytes(#"{"key":"value","array":[{}],"arrayWithNulls":[]}"#))
    }

    func testJSONNullStrippingLeavesBodiesWithoutNullsAlone() {
        let validator = JSONResponseValidator(removesKeysWithNullValues: true)
        assertAccepted(validator.validate(head: facts(200, "application/json"), body: bytes(#"{ "a": "null" }"#)),
                       body: nil, "nothing to strip: relay as received")
        assertAccepted(validator.validate(head: facts(200, "application/json"), body: bytes("null")),
                       body: nil, "a top-level null is not a member")
    }

    func testJSONWithoutStrippingNeverReplacesTheBody() {
        assertAccepted(JSONResponseValidator().validate(head: facts(200, "application/json"), body: bytes(#"{"a":null}"#)),
                       body: nil)
    }

    // MARK: XML

    func testXMLDefaults() {
        let validator = XMLResponseValidator()
        XCTAssertTrue(validator.needsBody)
        XCTAssertEqual(validator.base.acceptableContentTypes, ["application/xml", "text/xml"])
        XCTAssertEqual(validator.base.acceptableStatusCodes, .success)
    }

    func testXMLAcceptsAWellFormedDocument() {
        let validator = XMLResponseValidator()
        assertAccepted(validator.validate(head: facts(200, "text/xml; charset=utf-8"), body: bytes("<a><b/></a>")))
        assertAccepted(validator.validate(head: facts(200, "application/xml"), body: bytes(#"<?xml version="1.0"?><r/>"#)))
    }

    func testXMLRejectsMalformedAndEmptyBodies() {
        let validator = XMLResponseValidator()
        assertRejected(validator.validate(head: facts(200, "application/xml"), body: bytes("<a><b></a>")),
                       .invalidXML, code: -1017,
                       message: "Response body is not well-formed XML: end tag </a> does not match <b> at byte 6")
        assertRejected(validator.validate(head: facts(200, "application/xml"), body: []),
                       .invalidXML, code: -1017, message: "Response body is not well-formed XML: empty document at byte 0")
        assertRejected(validator.validate(head: facts(200, "application/json"), body: bytes("<a/>")),
                       .unacceptableContentType, code: -1016)
    }

    // MARK: Image

    func testImageDefaults() {
        let validator = ImageResponseValidator()
        XCTAssertTrue(validator.needsBody)
        XCTAssertEqual(validator.base.acceptableContentTypes, [
            "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon",
            "image/bmp", "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap",
        ])
    }

    func testImageAcceptsAKnownSignature() {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00]
        assertAccepted(ImageResponseValidator().validate(head: facts(200, "image/png"), body: png))
        assertAccepted(ImageResponseValidator().validate(head: facts(200, "IMAGE/X-ICON"), body: [0, 0, 1, 0, 1, 0]))
    }

    func testImageRejectsUnknownAndEmptyBodies() {
        let validator = ImageResponseValidator()
        assertRejected(validator.validate(head: facts(200, "image/png"), body: bytes("<html>")),
                       .invalidImage, code: -1017,
                       message: "Response body is not a supported image (PNG, JPEG, GIF, TIFF, BMP or ICO)")
        assertRejected(validator.validate(head: facts(200, "image/png"), body: []), .invalidImage, code: -1017)
        assertRejected(validator.validate(head: facts(200, "image/webp"), body: [0xFF, 0xD8, 0xFF]),
                       .unacceptableContentType, code: -1016)
    }
}
