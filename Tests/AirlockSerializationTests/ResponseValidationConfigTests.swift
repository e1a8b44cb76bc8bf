import AirlockSerialization
import XCTest

/// The `response:` block: defaults, every validation error by key, and the validator each builds.
final class ResponseValidationConfigTests: XCTestCase {
    func testDefaults() throws {
        let config = try ResponseValidationConfig()
        XCTAssertEqual(config.serializer, .http)
        XCTAssertEqual(config.serializers, [])
        XCTAssertEqual(config.acceptableStatusCodes, .success)
        XCTAssertNil(config.acceptableContentTypes)
        XCTAssertFalse(config.removesKeysWithNullValues)
        XCTAssertEqual(config.maxBodyBytes, 4_194_304)
        XCTAssertEqual(config.mode, .enforce)
        XCTAssertEqual(config.rejectStatus, 502)
    }

    func testReportOnlyHTTP() throws {
        let config = ResponseValidationConfig.reportOnlyHTTP
        XCTAssertEqual(config.serializer, .http)
        XCTAssertEqual(config.mode, .reportOnly)
        XCTAssertEqual(config.mode.rawValue, "report-only")
        var enforced = config
        enforced.mode = .enforce
        XCTAssertEqual(enforced, try ResponseValidationConfig(), "otherwise the defaults")
    }

    func testDefaultContentTypesPerSerializer() {
        XCTAssertNil(SerializerKind.http.defaultContentTypes)
        XCTAssertNil(SerializerKind.compound.defaultContentTypes)
        XCTAssertEqual(SerializerKind.json.defaultContentTypes, ["application/json", "text/json", "text/javascript"])
        XCTAssertEqual(SerializerKind.xml.defaultContentTypes, ["application/xml", "text/xml"])
        XCTAssertEqual(SerializerKind.image.defaultContentTypes?.count, 10)
        XCTAssertTrue(SerializerKind.image.defaultContentTypes?.contains("image/x-win-bitmap") == true)
    }

    func testEachSerializerBuildsItsValidatorWithDefaults() throws {
        let http = try ResponseValidationConfig(serializer: .http).makeValidator()
        XCTAssertTrue(http is HTTPResponseValidator)
        XCTAssertFalse(http.needsBody)
        assertAccepted(http.validate(head: facts(200, "anything/at-all")))

        let json = try XCTUnwrap(try ResponseValidationConfig(serializer: .json).makeValidator() as? JSONResponseValidator)
        XCTAssertEqual(json.base.acceptableContentTypes, SerializerKind.json.defaultContentTypes)
        XCTAssertFalse(json.removesKeysWithNullValues)

        let xml = try XCTUnwrap(try ResponseValidationConfig(serializer: .xml).makeValidator() as? XMLResponseValidator)
        XCTAssertEqual(xml.base.acceptableContentTypes, SerializerKind.xml.defaultContentTypes)

        let image = try XCTUnwrap(try ResponseValidationConfig(serializer: .image).makeValidator() as? ImageResponseValidator)
        XCTAssertEqual(image.base.acceptableContentTypes, SerializerKind.image.defaultContentTypes)
    }

    func testSettingsReachTheValidator() throws {
        let codes = try StatusCodeSet(parsing: ["200", "404"])
        let config = try ResponseValidationConfig(
            serializer: .json, acceptableStatusCodes: codes, acceptableContentTypes: [" Application/Vnd.API+JSON "],
            removesKeysWithNullValues: true, maxBodyBytes: 1024, mode: .reportOnly, rejectStatus: 503)
        XCTAssertEqual(config.acceptableContentTypes, ["application/vnd.api+json"], "trimmed and lowercased")
        let validator = try XCTUnwrap(config.makeValidator() as? JSONResponseValidator)
        XCTAssertEqual(validator.base.acceptableStatusCodes, codes)
        XCTAssertEqual(validator.base.acceptableContentTypes, ["application/vnd.api+json"])
        XCTAssertTrue(validator.removesKeysWithNullValues)
        assertAccepted(validator.validate(head: facts(404, "application/vnd.api+json"), body: bytes(#"{"a":null}"#)),
                       body: bytes("{}"))
        assertRejected(validator.validate(head: facts(200, "application/json"), body: bytes("{}")),
                       .unacceptableContentType, code: -1016)
    }

    func testCompoundBuildsItsMembersWithSharedSettings() throws {
        let config = try ResponseValidationConfig(
            serializer: .compound, serializers: [.image, .json], removesKeysWithNullValues: true)
        let compound = try XCTUnwrap(config.makeValidator() as? CompoundResponseValidator)
        XCTAssertEqual(compound.validators.count, 2)
        XCTAssertTrue(compound.validators[0] is ImageResponseValidator)
        let json = try XCTUnwrap(compound.validators[1] as? JSONResponseValidator)
        XCTAssertTrue(json.removesKeysWithNullValues)
        XCTAssertEqual(json.base.acceptableContentTypes, SerializerKind.json.defaultContentTypes)
        assertAccepted(compound.validate(head: facts(200, "application/json"), body: bytes("[null,1]")), body: bytes("[1]"))
    }

    func testSerializersErrors() {
        assertConfigError("serializers") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(serializer: .compound)
        }
        let nested = assertConfigError("serializers[1]") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(serializer: .compound, serializers: [.json, .compound])
        }
        XCTAssertEqual(nested, "a compound serializer cannot nest")
        assertConfigError("serializers") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(serializer: .json, serializers: [.xml])
        }
    }

    func testStatusCodeErrors() {
        assertConfigError("acceptable_status_codes") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(acceptableStatusCodes: StatusCodeSet(ranges: []))
        }
        let message = assertConfigError("acceptable_status_codes") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(acceptableStatusCodes: StatusCodeSet(ranges: [200...299, 600...700]))
        }
        XCTAssertEqual(message, "200-299, 600-700 is not within 100...599")
    }

    func testContentTypeErrors() {
        for bad in ["json", "application/", "/json", "a/b/c", "text html/x", "text/html; charset=utf-8", "*/*",
                    "image/*", "tëxt/html"] {
            let message = assertConfigError("acceptable_content_types") { () throws(ValidationConfigError) in
                try ResponseValidationConfig(acceptableContentTypes: ["text/plain", bad])
            }
            XCTAssertTrue(message?.contains("'\(bad)'") == true, "\(message ?? "no error") names \(bad)")
        }
        assertConfigError("acceptable_content_types") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(acceptableContentTypes: [])
        }
    }

    func testNullStrippingNeedsJSON() throws {
        for serializer in [SerializerKind.http, .xml, .image] {
            assertConfigError("removes_keys_with_null_values") { () throws(ValidationConfigError) in
                try ResponseValidationConfig(serializer: serializer, removesKeysWithNullValues: true)
            }
        }
        assertConfigError("removes_keys_with_null_values") { () throws(ValidationConfigError) in
            try ResponseValidationConfig(serializer: .compound, serializers: [.image, .xml], removesKeysWithNullValues: true)
        }
        XCTAssertTrue(try ResponseValidationConfig(serializer: .json, removesKeysWithNullValues: true).removesKeysWithNullValues)
    }

    func testMaxBodyBytesMustBePositive() {
        for bad in [0, -1] {
            assertConfigError("max_body_bytes") { () throws(ValidationConfigError) in
                try ResponseValidationConfig(maxBodyBytes: bad)
            }
        }
    }

    func testRejectStatusMustBeAnErrorStatus() throws {
        for bad in [200, 399, 600, 0] {
            let message = assertConfigError("reject_status") { () throws(ValidationConfigError) in
                try ResponseValidationConfig(rejectStatus: bad)
            }
            XCTAssertEqual(message, "must be within 400...599, got \(bad)")
        }
        XCTAssertEqual(try ResponseValidationConfig(rejectStatus: 400).rejectStatus, 400)
        XCTAssertEqual(try ResponseValidationConfig(rejectStatus: 599).rejectStatus, 599)
    }

    func testErrorDescriptionNamesTheKey() {
        XCTAssertEqual(ValidationConfigError(key: "reject_status", message: "must be within 400...599, got 200").description,
                       "reject_status: must be within 400...599, got 200")
    }

    func testRawValuesMatchTheConfigSpelling() {
        XCTAssertEqual(SerializerKind.allCases.map(\.rawValue), ["http", "json", "xml", "image", "plist", "compound"])
        XCTAssertEqual(ValidationMode(rawValue: "report-only"), .reportOnly)
        XCTAssertEqual(ValidationMode(rawValue: "enforce"), .enforce)
    }
}
