import AirlockSerialization
import XCTest

/// AFPropertyListResponseSerializer: application/x-plist by default, then a well-formed plist body.
final class PropertyListResponseValidatorTests: XCTestCase {
    private let xml = bytes(#"<?xml version="1.0"?><plist version="1.0"><dict><key>a</key><integer>1</integer></dict></plist>"#)

    func testDefaults() {
        let validator = PropertyListResponseValidator()
        XCTAssertTrue(validator.needsBody)
        XCTAssertEqual(validator.base.acceptableContentTypes, ["application/x-plist"])
        XCTAssertEqual(SerializerKind.plist.defaultContentTypes, ["application/x-plist"])
        XCTAssertEqual(validator.base.acceptableStatusCodes, .success)
    }

    func testAcceptsXMLAndBinaryBodies() throws {
        let validator = PropertyListResponseValidator()
        assertAccepted(validator.validate(head: facts(200, "application/x-plist"), body: xml))
        let binary = try pythonPlist("{'a': [1, 'b']}")
        assertAccepted(validator.validate(head: facts(200, "application/x-plist; charset=binary"), body: binary))
    }

    func testRejectsBrokenAndEmptyBodies() throws {
        let validator = PropertyListResponseValidator()
        var binary = try pythonPlist("{'a': [1, 'b']}")
        binary[binary.count - 26] = 0
        assertRejected(validator.validate(head: facts(200, "application/x-plist"), body: binary),
                       .invalidPropertyList, code: -1017,
                       message: "Response body is not a valid property list: binary: offset integer size 0 in the trailer is not within 1...8")
        assertRejected(validator.validate(head: facts(200, "application/x-plist"), body: bytes("<plist/>")),
                       .invalidPropertyList, code: -1017,
                       message: "Response body is not a valid property list: XML: <plist> holds no value at byte 0")
        assertRejected(validator.validate(head: facts(200, "application/x-plist"), body: []),
                       .invalidPropertyList, code: -1017,
                       message: "Response body is not a valid property list: XML: empty document at byte 0")
    }

    func testContentTypeAndStatusComeFirst() {
        let validator = PropertyListResponseValidator()
        assertRejected(validator.validate(head: facts(200, "application/xml"), body: xml), .unacceptableContentType, code: -1016)
        assertRejected(validator.validate(head: facts(500, "application/x-plist"), body: bytes("<plist/>")),
                       .unacceptableStatus, code: -1011)
    }

    func testConfigBuildsItAloneAndInACompound() throws {
        let plist = try XCTUnwrap(try ResponseValidationConfig(serializer: .plist).makeValidator() as? PropertyListResponseValidator)
        XCTAssertEqual(plist.base.acceptableContentTypes, ["application/x-plist"])
        let overridden = try ResponseValidationConfig(serializer: .plist, acceptableContentTypes: ["application/xml"])
        let narrowed = try XCTUnwrap(overridden.makeValidator() as? PropertyListResponseValidator)
        XCTAssertEqual(narrowed.base.acceptableContentTypes, ["application/xml"])
        assertAccepted(narrowed.validate(head: facts(200, "application/xml"), body: xml))

        let compound = try ResponseValidationConfig(serializer: .compound, serializers: [.json, .plist]).makeValidator()
        XCTAssertTrue(compound.needsBody)
        assertAccepted(compound.validate(head: facts(200, "application/x-plist"), body: xml))
        assertAccepted(compound.validate(head: facts(200, "application/json"), body: bytes("[1]")))
        assertRejected(compound.validate(head: facts(200, "application/x-plist"), body: bytes("<plist/>")),
                       .unacceptableContentType, code: -1016)
        assertRejected(try ResponseValidationConfig(serializer: .compound, serializers: [.plist, .json]).makeValidator()
                        .validate(head: facts(200, "application/x-plist"), body: bytes("<plist/>")),
                       .invalidPropertyList, code: -1017)
    }
}
