import AirlockSerialization
import XCTest
@testable import AirlockConfig

/// The `response:` block of a route and the top-level `admin`, `admin_allow_remote`, `rejects`.
final class ResponseConfigTests: XCTestCase {
    private func routeYAML(response: String) -> String {
        """
        routes:
          - name: ok
            match: { host: ok.test }
            upstream: origin
          - name: api
            match: { host: "*" }
            upstream: http://127.0.0.1:9000
            response:
        \(response.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))

        """
    }

    func testFullResponseBlockLoads() throws {
        let config = try AirlockConfig.load(yaml: routeYAML(response: """
            serializer: json
            acceptable_status_codes: [200-299, 304, "400-404"]
            acceptable_content_types: [Application/JSON, text/json]
            removes_keys_with_null_values: true
            max_body_bytes: 64KiB
            mode: report-only
            reject_status: 503
            """))
        XCTAssertNil(config.routes[0].response, "a route without response: is not validated")
        let r = try XCTUnwrap(config.routes[1].response)
        XCTAssertEqual(r.serializer, .json)
        XCTAssertEqual(r.acceptableStatusCodes, StatusCodeSet(ranges: [200...299, 304...304, 400...404]))
        XCTAssertEqual(r.acceptableContentTypes, ["application/json", "text/json"])
        XCTAssertTrue(r.removesKeysWithNullValues)
        XCTAssertEqual(r.maxBodyBytes, 65536)
        XCTAssertEqual(r.mode, .reportOnly)
        XCTAssertEqual(r.rejectStatus, 503)
        XCTAssertNotNil(config.routes[1].validator)
        XCTAssertTrue(config.routes[1].validator?.needsBody == true)
        XCTAssertNil(config.routes[0].validator)
    }

    func testEmptyBlockMeansHTTPEnforce() throws {
        let config = try AirlockConfig.load(yaml: routeYAML(response: "{}"))
        XCTAssertEqual(config.routes[1].response, try ResponseValidationConfig())
        XCTAssertEqual(config.routes[1].validator?.needsBody, false)
    }

    func testCompoundLoads() throws {
        let config = try AirlockConfig.load(yaml: routeYAML(response: "serializer: compound\nserializers: [image, json]"))
        XCTAssertEqual(config.routes[1].response?.serializers, [.image, .json])
    }

    func testPlistLoadsAloneAndInACompound() throws {
        let alone = try AirlockConfig.load(yaml: routeYAML(response: "serializer: plist"))
        XCTAssertEqual(alone.routes[1].response?.serializer, .plist)
        XCTAssertNil(alone.routes[1].response?.acceptableContentTypes, "application/x-plist by default")
        XCTAssertEqual(alone.routes[1].validator?.needsBody, true)
        let narrowed = try AirlockConfig.load(yaml: routeYAML(response: "serializer: plist\nacceptable_content_types: [application/xml]"))
        XCTAssertEqual(narrowed.routes[1].response?.acceptableContentTypes, ["application/xml"])
        let compound = try AirlockConfig.load(yaml: routeYAML(response: "serializer: compound\nserializers: [plist, json]"))
        XCTAssertEqual(compound.routes[1].response?.serializers, [.plist, .json])
        assertSingleIssue(routeYAML(response: "serializer: bplist"), at: "routes[1].response.serializer",
                          contains: "expected one of http, json, xml, image, plist, compound")
    }

    func testErrorsNameTheFullKeyPath() {
        let cases: [(String, String, String)] = [
            ("serializer: yaml", "routes[1].response.serializer", "expected one of http, json"),
            ("serializer: compound\nserializers: [json, soap]", "routes[1].response.serializers[1]", "soap"),
            ("serializer: compound", "routes[1].response.serializers", "at least one"),
            ("serializer: compound\nserializers: [compound]", "routes[1].response.serializers[0]", "cannot nest"),
            ("serializers: [json]", "routes[1].response.serializers", "only applies"),
            ("acceptable_status_codes: [200, 299-200]", "routes[1].response.acceptable_status_codes[1]", "ends before"),
            ("acceptable_status_codes: [600]", "routes[1].response.acceptable_status_codes[0]", "outside"),
            ("acceptable_content_types: [\"application/*\"]", "routes[1].response.acceptable_content_types", "wildcard"),
            ("removes_keys_with_null_values: yes please", "routes[1].response.removes_keys_with_null_values", "true or false"),
            ("removes_keys_with_null_values: true", "routes[1].response.removes_keys_with_null_values", "json"),
            ("max_body_bytes: lots", "routes[1].response.max_body_bytes", "size"),
            ("max_body_bytes: 0", "routes[1].response.max_body_bytes", "positive"),
            ("mode: block", "routes[1].response.mode", "enforce or report-only"),
            ("reject_status: 200", "routes[1].response.reject_status", "400...599"),
            ("reject_status: abc", "routes[1].response.reject_status", "400...599"),
            ("serialiser: json", "routes[1].response.serialiser", "did you mean \"serializer\""),
        ]
        for (block, path, fragment) in cases {
            assertSingleIssue(routeYAML(response: block), at: path, contains: fragment)
        }
    }

    func testAdminAndRejectsKeys() throws {
        let config = try AirlockConfig.load(yaml: "admin: 127.0.0.1:0\nrejects: { keep: 5 }\n" + defaultRouteYAML)
        XCTAssertEqual(config.admin.address, ListenAddress(host: "127.0.0.1", port: 0))
        XCTAssertEqual(config.rejects.keep, 5)
        let off = try AirlockConfig.load(yaml: "admin: off\n" + defaultRouteYAML)
        XCTAssertNil(off.admin.address)
        let defaults = try AirlockConfig.load(yaml: defaultRouteYAML)
        XCTAssertEqual(defaults.admin.address?.description, "127.0.0.1:9090")
        XCTAssertTrue(defaults.admin.isDefaultAddress)
    }

    func testNonLoopbackAdminIsRefusedWithoutAllowRemoteAndToken() throws {
        assertSingleIssue("admin: 0.0.0.0:9090\n" + defaultRouteYAML, at: "admin", contains: "admin_allow_remote: true")
        assertSingleIssue("admin: 0.0.0.0:9090\nadmin_allow_remote: true\n" + defaultRouteYAML, at: "admin_token",
                          contains: "Authorization: Bearer")
        let token = "0123456789abcdef0123"
        let allowed = try AirlockConfig.load(yaml: "admin: 0.0.0.0:9090\nadmin_allow_remote: true\nadmin_token: \(token)\n"
                                             + defaultRouteYAML)
        XCTAssertEqual(allowed.admin.address?.host, "0.0.0.0")
        XCTAssertEqual(allowed.admin.token, token)
        XCTAssertFalse(allowed.renderYAML().contains(token), "the token is never printed")
        XCTAssertTrue(allowed.renderYAML().contains("# admin_token: set (not shown)"))
    }

    func testAdminTokenMustBeLongAndHeaderSafe() {
        assertSingleIssue("admin_token: short\n" + defaultRouteYAML, at: "admin_token", contains: "at least 16")
        assertSingleIssue("admin_token: \"0123456789 abcdef\"\n" + defaultRouteYAML, at: "admin_token", contains: "printable ASCII")
    }

    func testAdminErrors() {
        assertSingleIssue("admin: nowhere\n" + defaultRouteYAML, at: "admin", contains: "off")
        assertSingleIssue("listen: 127.0.0.1:7000\nadmin: 127.0.0.1:7000\n" + defaultRouteYAML, at: "admin",
                          contains: "must not be the proxy listen address")
        assertSingleIssue("rejects: { keep: -1 }\n" + defaultRouteYAML, at: "rejects.keep", contains: "non-negative")
        assertSingleIssue("rejects: { keep: 2000000 }\n" + defaultRouteYAML, at: "rejects.keep", contains: "0...")
        assertSingleIssue("rejects: { kept: 1 }\n" + defaultRouteYAML, at: "rejects.kept", contains: "did you mean")
        assertSingleIssue("admin_allow_remote: maybe\n" + defaultRouteYAML, at: "admin_allow_remote", contains: "true or false")
    }

    func testRenderYAMLRoundTripsResponseAndAdmin() throws {
        let yaml = "admin: off\nrejects: { keep: 0 }\n" + routeYAML(response: """
            serializer: compound
            serializers: [image, json]
            acceptable_status_codes: [200-299, 304]
            acceptable_content_types: [application/json, image/png]
            removes_keys_with_null_values: true
            max_body_bytes: 1000
            mode: report-only
            reject_status: 504
            """)
        let config = try AirlockConfig.load(yaml: yaml)
        let rendered = config.renderYAML()
        XCTAssertEqual(try AirlockConfig.load(yaml: rendered), config, rendered)
        XCTAssertTrue(rendered.contains("admin: off"), rendered)
        XCTAssertTrue(rendered.contains("acceptable_status_codes: [\"200-299\", 304]"), rendered)
        let remote = try AirlockConfig.load(yaml: "admin: \"[::1]:0\"\n" + defaultRouteYAML)
        XCTAssertEqual(try AirlockConfig.load(yaml: remote.renderYAML()), remote)
    }
}
