import AirlockSerialization
import XCTest
@testable import AirlockConfig

/// The `request:` block of a route (issue #13): read, defaulted, refused and rendered.
final class RequestConfigTests: XCTestCase {
    private let environment = ["API_TOKEN": "tok.en-42~/+==", "EMPTY": ""]

    private func routeYAML(request: String) -> String {
        """
        routes:
          - name: ok
            match: { host: ok.test }
            upstream: origin
          - name: api
            match: { host: "*" }
            upstream: http://127.0.0.1:9000
            request:
        \(request.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))

        """
    }

    private func load(_ request: String) throws -> AirlockConfig {
        try AirlockConfig.load(yaml: routeYAML(request: request), environment: environment)
    }

    /// Read by the reader alone: keys the request phase does not apply yet are refused by the
    /// load's validation (see `testWhatTheRequestPhaseDoesNotApplyYetIsRefusedAtLoad`).
    private func readOnly(_ request: String) throws -> AirlockConfig {
        try AirlockConfig.read(yaml: routeYAML(request: request), environment: environment, validating: false)
    }

    /// throttle together with validate_multipart is read, but refused
    /// when the configuration loads, each by its key, until the request phase applies them:
    /// a key that is silently ignored would look like protection.
    func testWhatTheRequestPhaseDoesNotApplyYetIsRefusedAtLoad() {
        for (block, key) in [("throttle: { packet_bytes: 1024, delay: 0.1s }\nvalidate_multipart: true", "throttle")] {
            let found = issues(block)
            XCTAssertEqual(found.map(\.keyPath), ["routes[1].request.\(key)"], block)
            XCTAssertTrue(found.first?.message.contains("not supported yet") ?? false, block)
        }
        for block in ["serializer: http", "serializer: passthrough", "serializer: json", "serializer: plist",
                      "throttle: { packet_bytes: 1024, delay: 0.1s }",
                      "validate_multipart: false", "validate_multipart: true",
                      "headers: { X-A: b }\nparameters: { k: v }"] {
            XCTAssertNoThrow(try load(block), block)
        }
    }

    /// `timeout` bounds the whole exchange (the request phase applies it): it loads.
    func testTimeoutLoads() throws {
        let config = try load("timeout: 1.5s")
        XCTAssertEqual(config.routes[1].request?.timeout, .milliseconds(1500))
        XCTAssertEqual(issues("timeout: 0s").map(\.keyPath), ["routes[1].request.timeout"], "must be greater than 0")
    }

    /// The issues of a block that must not load.
    private func issues(_ request: String, file: StaticString = #filePath, line: UInt = #line) -> [ConfigError.Issue] {
        do {
            _ = try load(request)
            XCTFail("expected a ConfigError", file: file, line: line)
        } catch let error as ConfigError {
            return error.issues
        } catch {
            XCTFail("expected a ConfigError, got \(error)", file: file, line: line)
        }
        return []
    }

    func testEveryKeyIsRead() throws {
        let config = try readOnly("""
            serializer: json
            headers: { X-Api-Version: "2", X-Key: { secret: s3cr3t }, Accept: application/json }
            override_headers: { User-Agent: "airlock/1" }
            remove_headers: [Cookie, X-Debug]
            parameters: { api_key: "k", n: 3, flag: null, filter: { state: open, tags: [a, b, ~] } }
            parameters_in_uri: [get, HEAD]
            authorization: { basic: { username: u, password: p } }
            timeout: 30s
            throttle: { packet_bytes: 16KiB, delay: 0.2s }
            validate_multipart: true
            """)
        XCTAssertNil(config.routes[0].request, "a route without request: sends requests as written")
        let r = try XCTUnwrap(config.routes[1].request)
        XCTAssertEqual(r.serializer, .json)
        XCTAssertEqual(r.headers, [.init(name: "X-Api-Version", value: "2"), .init(name: "X-Key", value: "s3cr3t", isSecret: true),
                                   .init(name: "Accept", value: "application/json")], "YAML order kept")
        XCTAssertEqual(r.overrideHeaders, [.init(name: "User-Agent", value: "airlock/1")])
        XCTAssertEqual(r.removeHeaders, ["cookie", "x-debug"])
        XCTAssertEqual(r.parameters, ["api_key": "k", "n": "3", "flag": .null,
                                      "filter": ["state": "open", "tags": ["a", "b", .null]]])
        XCTAssertEqual(r.parametersInURI, ["GET", "HEAD"])
        XCTAssertEqual(r.authorization, .basic(username: "u", password: "p"))
        XCTAssertEqual(r.authorizationHeaderValue, "Basic dTpw")
        XCTAssertEqual(r.timeout, .seconds(30))
        XCTAssertEqual(r.throttle, .init(packetBytes: 16384, delay: .milliseconds(200)))
        XCTAssertTrue(r.validateMultipart)
    }

    func testEmptyBlockTakesTheDefaults() throws {
        let r = try XCTUnwrap(try load("{}").routes[1].request)
        XCTAssertEqual(r, try RequestSerializationConfig())
        XCTAssertEqual(r.serializer, .http)
        XCTAssertEqual(r.headers, [])
        XCTAssertEqual(r.overrideHeaders, [])
        XCTAssertEqual(r.removeHeaders, [])
        XCTAssertEqual(r.parameters, [:])
        XCTAssertEqual(r.parametersInURI, ["GET", "HEAD", "DELETE"], "AF's HTTPMethodsEncodingParametersInURI")
        XCTAssertNil(r.authorization)
        XCTAssertNil(r.authorizationHeaderValue)
        XCTAssertNil(r.timeout)
        XCTAssertNil(r.throttle)
        XCTAssertFalse(r.validateMultipart)
    }

    func testBearerTokenComesFromTheEnvironment() throws {
        let r = try XCTUnwrap(try load("authorization: { bearer_env: API_TOKEN }").routes[1].request)
        XCTAssertEqual(r.authorization, .bearer(token: "tok.en-42~/+=="))
        XCTAssertEqual(r.authorizationHeaderValue, "Bearer tok.en-42~/+==")
    }

    func testBasicValueIsBase64OfUserColonPassword() throws {
        // RFC 7617 section 2's example, and every padding length.
        let cases = [("Aladdin", "open sesame", "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="), ("ab", "", "YWI6"),
                     ("a", "", "YTo="), ("abc", "", "YWJjOg=="), ("é", "ü", "w6k6w7w=")]
        for (user, password, encoded) in cases {
            let r = try RequestSerializationConfig(authorization: .basic(username: user, password: password))
            XCTAssertEqual(r.authorizationHeaderValue, "Basic " + encoded, "\(user):\(password)")
        }
    }

    func testPassthroughTakesParametersButNotParametersInURI() throws {
        let r = try XCTUnwrap(try load("serializer: passthrough\nparameters: { api_key: k }").routes[1].request)
        XCTAssertEqual(r.serializer, .passthrough)
        XCTAssertEqual(r.parameters, ["api_key": "k"], "route parameters on a passthrough route go to the query")
        XCTAssertEqual(issues("serializer: passthrough\nparameters_in_uri: [GET]").map(\.keyPath),
                       ["routes[1].request.parameters_in_uri"])
    }

    func testDecimalSecondsAndMilliseconds() {
        XCTAssertEqual(ConfigReader.parseRequestDuration("0.2s"), .milliseconds(200))
        XCTAssertEqual(ConfigReader.parseRequestDuration("1.25s"), .milliseconds(1250))
        XCTAssertEqual(ConfigReader.parseRequestDuration("250ms"), .milliseconds(250))
        XCTAssertEqual(ConfigReader.parseRequestDuration("2m"), .seconds(120))
        for bad in ["0.2", ".2s", "1.s", "1.2345s", "1.5ms", "-1s", "1.-5s", "0.2m"] {
            XCTAssertNil(ConfigReader.parseRequestDuration(bad), bad)
        }
    }

    func testErrorsNameTheFullKeyPath() {
        let p = "routes[1].request."
        let cases: [(String, String, String)] = [
            ("serialiser: json", p + "serialiser", "did you mean \"serializer\""),
            ("serializer: xml", p + "serializer", "expected one of http, json, plist, passthrough"),
            ("headers: { \"X Bad\": v }", p + "headers.X Bad", "RFC 9110 token"),
            ("headers: { \"X-Bad:\": v }", p + "headers.X-Bad:", "RFC 9110 token"),
            ("headers: { X-Bad: \"a\\r\\nX-Evil: 1\" }", p + "headers.X-Bad", "CR, LF, NUL"),
            ("headers: { X-Bad: \"a\\0b\" }", p + "headers.X-Bad", "CR, LF, NUL"),
            ("headers: { X-Bad: \"a\\x7Fb\" }", p + "headers.X-Bad", "control"),
            ("override_headers: { X-Bad: \"a\\nb\" }", p + "override_headers.X-Bad", "CR, LF, NUL"),
            ("headers: { X-Key: { secret: \"a\\rb\" } }", p + "headers.X-Key", "CR, LF, NUL"),
            ("headers: { X-Key: { secret: v, other: w } }", p + "headers.X-Key.other", "unknown key"),
            ("headers: { X-Key: [v] }", p + "headers.X-Key", "expected a single value"),
            ("headers: [X-Key]", p + "headers", "expected a mapping"),
            ("headers: { X-A: 1, x-a: 2 }", p + "headers.x-a", "duplicate"),
            ("headers: { X-A: 1 }\noverride_headers: { X-a: 2 }", p + "override_headers.X-a", "also set in headers"),
            ("authorization: { bearer_env: API_TOKEN }\nheaders: { Authorization: x }", p + "headers.Authorization",
             "authorization already sets"),
            ("remove_headers: [Cookie, \"Set Cookie\"]", p + "remove_headers[1]", "RFC 9110 token"),
            ("remove_headers: [Cookie, COOKIE]", p + "remove_headers[1]", "duplicate"),
            ("parameters: [a, b]", p + "parameters", "expected a mapping"),
            ("parameters: a", p + "parameters", "expected a mapping"),
            ("parameters: { a: { [x]: 1 } }", p + "parameters.a", "plain strings"),
            ("parameters_in_uri: [GET, \"PO ST\"]", p + "parameters_in_uri[1]", "not a method name"),
            ("parameters_in_uri: [GET, \"\"]", p + "parameters_in_uri[1]", "not a method name"),
            ("authorization: {}", p + "authorization", "basic"),
            ("authorization: { basic: { username: u }, bearer_env: API_TOKEN }", p + "authorization", "exclusive"),
            ("authorization: { basic: { username: \"\", password: p } }", p + "authorization.basic.username", "empty"),
            ("authorization: { basic: { password: p } }", p + "authorization.basic.username", "required"),
            ("authorization: { basic: { username: \"a:b\" } }", p + "authorization.basic.username", "\":\""),
            ("authorization: { basic: { username: u, password: \"p\\nq\" } }", p + "authorization.basic.password", "control"),
            ("authorization: { basic: { username: u, pass: p } }", p + "authorization.basic.pass", "unknown key"),
            ("authorization: { bearer_env: NOT_SET_ANYWHERE }", p + "authorization.bearer_env", "not set"),
            ("authorization: { bearer_env: EMPTY }", p + "authorization.bearer_env", "empty"),
            ("authorization: { bearer: x }", p + "authorization.bearer", "unknown key"),
            ("timeout: 0s", p + "timeout", "greater than 0"),
            ("timeout: -1s", p + "timeout", "greater than 0"),
            ("timeout: soon", p + "timeout", "expected a duration"),
            ("throttle: { packet_bytes: 0, delay: 0.2s }", p + "throttle.packet_bytes", "1...16777216"),
            ("throttle: { packet_bytes: 16777217, delay: 0.2s }", p + "throttle.packet_bytes", "1...16777216"),
            ("throttle: { packet_bytes: 64GiB, delay: 0.2s }", p + "throttle.packet_bytes", "up to 16MiB"),
            ("throttle: { packet_bytes: 1024, delay: 61s }", p + "throttle.delay", "0...60s"),
            ("throttle: { packet_bytes: 1024, delay: -1s }", p + "throttle.delay", "0...60s"),
            ("throttle: { packet_bytes: 1024 }", p + "throttle.delay", "required"),
            ("throttle: { delay: 1s }", p + "throttle.packet_bytes", "required"),
            ("validate_multipart: maybe", p + "validate_multipart", "true or false"),
        ]
        for (request, keyPath, fragment) in cases {
            let found = issues(request)
            XCTAssertEqual(found.map(\.keyPath), [keyPath], "\(request): \(found)")
            if let issue = found.first {
                XCTAssertTrue(issue.message.contains(fragment), "\(request): \"\(issue.message)\" lacks \"\(fragment)\"")
            }
        }
    }

    func testFramingAndHopByHopFieldsAreRefused() {
        for name in ["Connection", "Transfer-Encoding", "content-length", "Host", "TE", "Upgrade", "Keep-Alive",
                     "Proxy-Connection", "Trailer"] {
            for list in ["headers", "override_headers"] {
                let found = issues("\(list): { \(name): x }")
                XCTAssertEqual(found.map(\.keyPath), ["routes[1].request.\(list).\(name)"], "\(found)")
                XCTAssertTrue(found.first?.message.contains("the gateway sets it") == true, "\(found)")
            }
        }
        XCTAssertNoThrow(try load("remove_headers: [Connection]"), "removing is not setting")
    }

    func testEveryProblemIsReportedAtOnce() {
        let found = issues("""
            headers: { Host: x, "B d": y }
            timeout: 0s
            throttle: { packet_bytes: 0, delay: 0.5s }
            """)
        XCTAssertEqual(Set(found.map(\.keyPath)), ["routes[1].request.headers.Host", "routes[1].request.headers.B d",
                                                   "routes[1].request.timeout", "routes[1].request.throttle.packet_bytes"])
    }

    func testRenderYAMLRoundTrips() throws {
        let yaml = routeYAML(request: """
            serializer: plist
            headers: { X-Api-Version: "2", "X-Odd!": "a \\"quoted\\" value: yes", Empty: "" }
            override_headers: { User-Agent: "airlock/1", Accept: null-ish }
            remove_headers: [Cookie, x-debug]
            parameters: { api_key: "k", "null": "null", t: "true", n: 0012, nil: ~, e: "", u: "é\\u0001",
                          filter: { state: open, tags: [a, "b c", [], {}] } }
            parameters_in_uri: [GET, purge]
            timeout: 1.5s
            throttle: { packet_bytes: 16384, delay: 0.2s }
            validate_multipart: true
            """)
        let config = try AirlockConfig.read(yaml: yaml, environment: [:], validating: false)
        let rendered = config.renderYAML()
        XCTAssertEqual(try AirlockConfig.read(yaml: rendered, environment: [:], validating: false), config, rendered)
        XCTAssertEqual(config.routes[1].request?.parameters["nil"], .null)
        XCTAssertEqual(config.routes[1].request?.parameters["null"], "null")
        for block in ["{}", "serializer: passthrough\nparameters: { a: b }", "parameters_in_uri: []"] {
            let config = try AirlockConfig.load(yaml: routeYAML(request: block), environment: [:])
            XCTAssertEqual(try AirlockConfig.load(yaml: config.renderYAML(), environment: [:]), config, config.renderYAML())
        }
    }

    func testSecretsAreNeverRendered() throws {
        let yaml = routeYAML(request: """
            headers: { X-Public: visible, X-Key: { secret: hdr-secret-1 } }
            override_headers: { X-Other: { secret: hdr-secret-2 } }
            authorization: { basic: { username: user-secret, password: pass-secret } }
            """)
        let config = try AirlockConfig.load(yaml: yaml, environment: [:])
        let bearer = try AirlockConfig.load(yaml: routeYAML(request: "authorization: { bearer_env: API_TOKEN }"),
                                            environment: environment)
        let rendered = config.renderYAML() + bearer.renderYAML()
        let described = "\(config)" + String(reflecting: config) + "\(bearer)" + String(reflecting: bearer)
        for secret in ["hdr-secret-1", "hdr-secret-2", "user-secret", "pass-secret", "tok.en-42", "dXNlci1zZWNyZXQ6"] {
            XCTAssertFalse(rendered.contains(secret), "\(secret) in\n\(rendered)")
            XCTAssertFalse(described.contains(secret), "\(secret) in\n\(described)")
        }
        XCTAssertTrue(rendered.contains("visible"), rendered)
        XCTAssertTrue(rendered.contains("# headers.X-Key: (secret, not shown)"), rendered)
        XCTAssertTrue(rendered.contains("# override_headers.X-Other: (secret, not shown)"), rendered)
        XCTAssertTrue(rendered.contains("# authorization: set (not shown)"), rendered)
        // What loads back is the block without its secrets, and it still loads.
        let back = try XCTUnwrap(try AirlockConfig.load(yaml: config.renderYAML(), environment: [:]).routes[1].request)
        XCTAssertEqual(back.headers, [.init(name: "X-Public", value: "visible")])
        XCTAssertEqual(back.overrideHeaders, [])
        XCTAssertNil(back.authorization)
    }
}
