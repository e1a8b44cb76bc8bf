import AirlockSerialization
import XCTest

/// AFCompoundResponseSerializer: the first acceptance wins; otherwise the first error.
final class CompoundResponseValidatorTests: XCTestCase {
    private let imageThenJSON = CompoundResponseValidator(validators: [
        ImageResponseValidator(), JSONResponseValidator(removesKeysWithNullValues: true),
    ])

    func testNeedsBodyWhenAnyMemberDoes() {
        XCTAssertTrue(imageThenJSON.needsBody)
        XCTAssertFalse(CompoundResponseValidator(validators: [HTTPResponseValidator()]).needsBody)
        XCTAssertTrue(CompoundResponseValidator(validators: [HTTPResponseValidator(), XMLResponseValidator()]).needsBody)
    }

    func testImageThenJSONChoosesJSONForAJSONResponse() {
        assertAccepted(imageThenJSON.validate(head: facts(200, "application/json"), body: bytes(#"{"a":1}"#)))
    }

    func testTheWinnersTransformedBodyIsKept() {
        assertAccepted(imageThenJSON.validate(head: facts(200, "application/json"), body: bytes(#"{"a":1,"b":null}"#)),
                       body: bytes(#"{"a":1}"#))
    }

    func testImageThenJSONChoosesImageForAPNG() {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        assertAccepted(imageThenJSON.validate(head: facts(200, "image/png"), body: png))
    }

    func testWhenNoneAcceptsTheFirstErrorIsReturned() {
        assertRejected(imageThenJSON.validate(head: facts(200, "text/html"), body: bytes("<p>")),
                       .unacceptableContentType, code: -1016,
                       message: "Request failed: unacceptable content-type: text/html")
        // The image validator fails on the content type, the JSON one on the body: the image error wins.
        assertRejected(imageThenJSON.validate(head: facts(200, "application/json"), body: bytes("{invalid}")),
                       .unacceptableContentType, code: -1016,
                       message: "Request failed: unacceptable content-type: application/json")
        let jsonFirst = CompoundResponseValidator(validators: [JSONResponseValidator(), ImageResponseValidator()])
        assertRejected(jsonFirst.validate(head: facts(200, "application/json"), body: bytes("{invalid}")),
                       .invalidJSON, code: -1017)
    }

    func testHeadOnlyCheckAcceptsWhenAnyMemberAcceptsTheHead() {
        assertAccepted(imageThenJSON.validate(head: facts(200, "application/json", bodyIsEmpty: nil)))
        assertRejected(imageThenJSON.validate(head: facts(404, "image/png", bodyIsEmpty: nil)),
                       .unacceptableStatus, code: -1011, message: "Request failed: Not Found (404)")
    }

    func testNoMembersAcceptsEverything() {
        assertAccepted(CompoundResponseValidator(validators: []).validate(head: facts(500, nil), body: bytes("x")))
    }
}
