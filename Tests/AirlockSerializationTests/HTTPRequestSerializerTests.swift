import AirlockSerialization
import XCTest

/// The request serializers with no sockets: each of http, json, plist and passthrough on the
/// head (fields, target) and the body (relay, replace, collect, transform, refuse).
final class HTTPRequestSerializerTests: XCTestCase {
    private func serializer(_ kind: RequestSerializerKind = .http, parameters: RequestParameters = [:],
                            headers: [RequestSerializationConfig.HeaderField] = [],
                            overrides: [RequestSerializationConfig.HeaderField] = [], remove: [String] = [],
                            authorization: RequestSerializationConfig.Authorization? = nil,
                            inURI: Set<String> = RequestSerializationConfig.defaultParametersInURI) throws -> HTTPRequestSerializer {
        HTTPRequestSerializer(config: try RequestSerializationConfig(
            serializer: kind, headers: headers, overrideHeaders: overrides, removeHeaders: remove,
            parameters: parameters, parametersInURI: inURI, authorization: authorization))
    }

    private func replacement(_ body: HTTPRequestSerializer.Body, file: StaticString = #filePath, line: UInt = #line)
        -> HTTPRequestSerializer.Replacement? {
        guard case .replace(let r) = body else {
            XCTFail("expected a replacement body, got \(body)", file: file, line: line)
            return nil
        }
        return r
    }

    // MARK: head

    func testFieldsLeftOutAndAddedByAFsRules() throws {
        let s = try serializer(headers: [.init(name: "X-Api-Version", value: "2"), .init(name: "Accept", value: "a/b")],
                               overrides: [.init(name: "User-Agent", value: "airlock/1")], remove: ["Cookie"],
                               authorization: .basic(username: "u", password: "p"))
        XCTAssertTrue(s.drops("cookie"))
        XCTAssertTrue(s.drops("user-agent"), "an overridden field is the route's")
        XCTAssertFalse(s.drops("accept"), "a default never removes the client's field")
        let none = s.addedFields(clientSent: { _ in false })
        XCTAssertEqual(none.map(\.name), ["X-Api-Version", "Accept", "Authorization", "User-Agent"])
        XCTAssertEqual(none.first { $0.name == "Authorization" }?.value, "Basic dTpw")
        let all = s.addedFields(clientSent: { $0 == "x-api-version" || $0 == "accept" || $0 == "authorization" })
        XCTAssertEqual(all.map(\.name), ["User-Agent"], "defaults and authorization only when the client sent none")
    }

    func testTargetGetsTheQueryForURIMethodsOnly() throws {
        let s = try serializer(parameters: ["key": "value", "key1": "value&"])
        XCTAssertEqual(s.target("/a", method: "GET"), "/a?key=value&key1=value%26")
        XCTAssertEqual(s.target("/a?b=1", method: "DELETE"), "/a?b=1&key=value&key1=value%26")
        XCTAssertNil(s.target("/a", method: "POST"), "a body method keeps its target")
        XCTAssertNil(try serializer().target("/a", method: "GET"), "empty parameters append nothing")
        let passthrough = try serializer(.passthrough, parameters: ["k": "v"], inURI: [])
        XCTAssertEqual(passthrough.target("/u", method: "POST"), "/u?k=v", "passthrough: the query, every method")
    }

    // MARK: body

    func testHTTPBodies() throws {
        let s = try serializer(parameters: ["key": "value"])
        XCTAssertEqual(s.body(method: "GET", clientBodyEmpty: true), .relay)
        let r = replacement(s.body(method: "POST", clientBodyEmpty: true))
        XCTAssertEqual(r?.bytes, Array("key=value".utf8))
        XCTAssertEqual(r?.contentType, "application/x-www-form-urlencoded")
        XCTAssertEqual(r?.replacesClientType, false, "a client's own Content-Type stays")
        XCTAssertEqual(replacement(try serializer().body(method: "POST", clientBodyEmpty: true))?.bytes, [], "an empty body is valid")
        XCTAssertEqual(s.body(method: "POST", clientBodyEmpty: false), .collect)
        XCTAssertEqual(try serializer().body(method: "POST", clientBodyEmpty: false), .relay, "nothing to merge: relayed")
        let merged = replacement(s.transform(collected: Array("a=1&key=client".utf8),
                                             clientContentType: "application/x-www-form-urlencoded; charset=utf-8", method: "POST"))
        XCTAssertEqual(merged.map { String(decoding: $0.bytes, as: UTF8.self) }, "a=1&key=value", "the route wins a shared key")
        guard case .refuse(let e) = s.transform(collected: Array("{}".utf8), clientContentType: "application/json", method: "POST") else {
            return XCTFail("a JSON body cannot take form parameters")
        }
        XCTAssertEqual(e.reason, "unmergeable-body")
    }

    func testJSONAndPlistBodies() throws {
        let json = try serializer(.json, parameters: ["api_key": "k"])
        let alone = replacement(json.body(method: "POST", clientBodyEmpty: true))
        XCTAssertEqual(alone.map { String(decoding: $0.bytes, as: UTF8.self) }, #"{"api_key":"k"}"#)
        XCTAssertEqual(alone?.contentType, "application/json")
        XCTAssertEqual(alone?.replacesClientType, true)
        XCTAssertEqual(try serializer(.json).body(method: "POST", clientBodyEmpty: true), .relay, "no parameters, no body")
        XCTAssertEqual(json.body(method: "GET", clientBodyEmpty: true), .relay)
        let form = Array("a%5Bb%5D=1&l%5B%5D=1&l%5B%5D=2".utf8)
        let built = replacement(json.transform(collected: form, clientContentType: "application/x-www-form-urlencoded", method: "PUT"))
        XCTAssertEqual(built.map { String(decoding: $0.bytes, as: UTF8.self) }, #"{"a":{"b":"1"},"api_key":"k","l":["1","2"]}"#)
        guard case .refuse(let bad) = json.transform(collected: Array("a=%zz".utf8),
                                                     clientContentType: "application/x-www-form-urlencoded", method: "POST") else {
            return XCTFail("an invalid form body is refused")
        }
        XCTAssertEqual(bad.reason, "invalid-form-body")
        let own = replacement(try serializer(.json).transform(collected: Array("[1]".utf8), clientContentType: "application/json",
                                                              method: "POST"))
        XCTAssertEqual(own?.bytes, Array("[1]".utf8), "a JSON body with nothing to add goes up as it came")
        let plist = try serializer(.plist, parameters: ["k": "v"])
        let p = replacement(plist.body(method: "POST", clientBodyEmpty: true))
        XCTAssertEqual(p?.contentType, "application/x-plist")
        XCTAssertTrue(p.map { String(decoding: $0.bytes, as: UTF8.self).contains("<key>k</key>") } ?? false)
    }

    func testPassthroughNeverTouchesTheBody() throws {
        let s = try serializer(.passthrough, parameters: ["k": "v"], inURI: [])
        XCTAssertEqual(s.body(method: "POST", clientBodyEmpty: false), .relay)
        XCTAssertEqual(s.body(method: "POST", clientBodyEmpty: true), .relay)
    }
}
