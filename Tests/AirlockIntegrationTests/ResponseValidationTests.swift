import AirlockTesting
import Foundation
import XCTest

/// Response validation through real sockets: one origin whose answer is named by the last path
/// segment, behind routes (by path prefix) with different `response:` blocks.
final class ResponseValidationTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    static let nulls = #"{"key":"value","nullkey":null,"array":[{"subnullkey":null}],"arrayWithNulls":[null]}"#
    /// 2.5 MB of valid JSON: more than the client's socket takes at once.
    static let largeJSON: [UInt8] = Array(("[" + String(repeating: "12345678,", count: 280_000) + "0]").utf8)
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]

    /// `/<prefix>/<name>[?ct=<content type>]`.
    static func answer(_ req: TestRequest) -> TestResponse {
        let target = req.target
        let path = target.split(separator: "?").first.map(String.init) ?? target
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        var ct = "application/json"
        if let q = target.firstIndex(of: "?"), target[q...].hasPrefix("?ct=") {
            ct = String(target[target.index(q, offsetBy: 4)...]).removingPercentEncoding ?? ct
        }
        func body(_ status: Int, _ reason: String, _ type: String?, _ bytes: [UInt8], chunked: Bool = false) -> TestResponse {
            TestResponse(status: status, reason: reason, headers: type.map { [("Content-Type", $0)] } ?? [],
                         body: .bytes(bytes), chunked: chunked)
        }
        switch name {
        case "html": return body(200, "OK", "text/html; charset=utf-8", Array("<p>hello</p>".utf8))
        case "404": return body(404, "Not Found", "text/html", Array("<h1>no such thing</h1>\u{1}\u{FF}".utf8))
        case "500": return body(500, "Internal Server Error", "text/plain", Array("boom".utf8) + [0xFF, 0xFE])
        case "205-empty": return body(205, "Reset Content", nil, [])
        case "205-body": return body(205, "Reset Content", nil, Array("x".utf8))
        case "json": return body(200, "OK", ct, Array(#"{"a":[1,2,{"b":null}]}"#.utf8))
        case "invalid": return body(200, "OK", "application/json", Array("{invalid}".utf8))
        case "empty": return body(200, "OK", "application/json", [])
        case "space": return body(200, "OK", "application/json", [0x20])
        case "nulls": return body(200, "OK", "application/json", Array(nulls.utf8))
        case "chunked": return body(200, "OK", "application/json", Array(#"{"chunked":true,"n":null}"#.utf8), chunked: true)
        case "xml-ok": return body(200, "OK", "application/xml", Array(#"<?xml version="1.0"?><a x="1"><b/>t</a>"#.utf8))
        case "xml-bad": return body(200, "OK", "text/xml", Array("<a><b></a>".utf8))
        case "png": return body(200, "OK", "image/png", png)
        case "big": return body(200, "OK", "application/json", Array(("[" + String(repeating: "1,", count: 1500) + "1]").utf8))
        case "large": return body(200, "OK", "application/json", largeJSON)
        case "big-chunked":
            return body(200, "OK", "application/json", Array(("[" + String(repeating: "1,", count: 1500) + "1]").utf8), chunked: true)
        default: return body(404, "Not Found", "text/plain", Array("unknown \(name)".utf8))
        }
    }

    private func start() throws -> AirlockProcess {
        let o = try TestOrigin(.respond(Self.answer))
        origin = o
        let up = "http://127.0.0.1:\(o.port)"
        let yaml = """
        listen: 127.0.0.1:0
        workers: 2
        admin: 127.0.0.1:0
        \(Fixture.limitsYAML([:]))
        routes:
          - name: http
            match: { host: "*", path_prefix: /a/ }
            upstream: \(up)
            response: { serializer: http }
          - name: html-only
            match: { host: "*", path_prefix: /h/ }
            upstream: \(up)
            response: { serializer: http, acceptable_content_types: [text/html] }
          - name: json
            match: { host: "*", path_prefix: /j/ }
            upstream: \(up)
            response: { serializer: json }
          - name: json-nulls
            match: { host: "*", path_prefix: /jn/ }
            upstream: \(up)
            response: { serializer: json, removes_keys_with_null_values: true }
          - name: xml
            match: { host: "*", path_prefix: /x/ }
            upstream: \(up)
            response: { serializer: xml }
          - name: compound
            match: { host: "*", path_prefix: /c/ }
            upstream: \(up)
            response: { serializer: compound, serializers: [image, json] }
          - name: small
            match: { host: "*", path_prefix: /s/ }
            upstream: \(up)
            response: { serializer: json, max_body_bytes: 1000, reject_status: 503 }
          - name: report
            match: { host: "*", path_prefix: /r/ }
            upstream: \(up)
            response: { serializer: json, mode: report-only, max_body_bytes: 1000 }
          - name: plain
            match: { host: "*" }
            upstream: \(up)
        """
        let a = try Fixture.start(yaml)
        airlock = a
        return a
    }

    private func adminPort(_ a: AirlockProcess) throws -> UInt16 {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return UInt16(try XCTUnwrap(record["port"] as? Int))
    }

    private func rejectRecord(_ a: AirlockProcess, requestID: String) -> [String: Any]? {
        a.waitForLog(timeout: 5) {
            $0["event"] as? String == "response.rejected" && $0["request_id"] as? String == requestID
        }
    }

    /// Asserts an enforce-mode reject body and returns it.
    @discardableResult
    private func assertRejected(_ r: RawResponse, status: Int = 502, reason: String, code: Int,
                                file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        XCTAssertEqual(r.status, status, r.bodyString, file: file, line: line)
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "rejected-response", r.bodyString, file: file, line: line)
        XCTAssertEqual(body["reason"] as? String, reason, r.bodyString, file: file, line: line)
        XCTAssertEqual(body["code"] as? Int, code, r.bodyString, file: file, line: line)
        XCTAssertNotNil(body["request_id"] as? String, file: file, line: line)
        XCTAssertTrue((body["url"] as? String ?? "").hasPrefix("http://127.0.0.1:"), r.bodyString, file: file, line: line)
        return body
    }

    private func get(_ c: RawClient, _ target: String, method: String = "GET") throws -> RawResponse {
        try c.exchange("\(method) \(target) HTTP/1.1\r\nHost: gw.test\r\n\r\n", method: method)
    }

    // MARK: http serializer

    func testHTTPRouteRelays200AndRejectsErrorsWithTheBodySample() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let ok = try get(c, "/a/html")
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.bodyString, "<p>hello</p>")

        let notFound = try get(c, "/a/404")
        let body = assertRejected(notFound, reason: "unacceptable-status", code: -1011)
        XCTAssertEqual(body["message"] as? String, "Request failed: Not Found (404)")
        XCTAssertEqual(body["upstream_status"] as? Int, 404)
        XCTAssertEqual(body["content_type"] as? String, "text/html")
        let id = try XCTUnwrap(body["request_id"] as? String)
        let record = try XCTUnwrap(rejectRecord(a, requestID: id))
        XCTAssertEqual(record["route"] as? String, "http")
        XCTAssertEqual(record["method"] as? String, "GET")
        XCTAssertEqual(record["status"] as? Int, 404)
        XCTAssertEqual(record["code"] as? Int, -1011)
        XCTAssertEqual(record["mode"] as? String, "enforce")
        XCTAssertEqual(record["reason"] as? String, "unacceptable-status")
        XCTAssertEqual(record["body_sample"] as? String, "<h1>no such thing</h1>\u{1}\u{FF}")
        XCTAssertNotNil(record["duration_ms"] as? Double ?? (record["duration_ms"] as? Int).map(Double.init))
        XCTAssertTrue((record["upstream"] as? String ?? "").hasPrefix("127.0.0.1:"))
        XCTAssertTrue((record["url"] as? String ?? "").hasSuffix("/a/404"))

        // The connection survives a reject (the body was read whole), and so does the upstream's.
        let serverError = try get(c, "/a/500")
        assertRejected(serverError, reason: "unacceptable-status", code: -1011)
        let id500 = try XCTUnwrap(Fixture.json(serverError.body)["request_id"] as? String)
        let record500 = try XCTUnwrap(rejectRecord(a, requestID: id500))
        XCTAssertEqual(record500["body_sample"] as? String, "boom\u{FFFD}\u{FFFD}", "invalid UTF-8 is replaced")
        XCTAssertEqual(try get(c, "/a/html").status, 200)
        XCTAssertEqual(origin?.acceptedConnections, 1, "the upstream connection is reused after rejects")
    }

    func test205WithoutContentTypeOnAnHTMLOnlyRoute() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let empty = try get(c, "/h/205-empty")
        XCTAssertEqual(empty.status, 205, "no content type and no body passes the content-type check")
        let withBody = try get(c, "/h/205-body")
        let body = assertRejected(withBody, reason: "unacceptable-content-type", code: -1016)
        XCTAssertEqual(body["message"] as? String, "Request failed: unacceptable content-type: (none)")
        XCTAssertTrue(body["content_type"] is NSNull, "\(body)")
        XCTAssertEqual(try get(c, "/h/html").status, 200)
    }

    // MARK: json

    func testJSONContentTypes() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        for type in ["application/json", "text/json", "text/javascript", "application/json; charset=utf-8"] {
            let r = try get(c, "/j/json?ct=\(type.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            XCTAssertEqual(r.status, 200, type)
            XCTAssertEqual(r.bodyString, #"{"a":[1,2,{"b":null}]}"#, type)
            XCTAssertEqual(r.header("Content-Length"), String(r.body.count))
            XCTAssertEqual(r.header("Content-Type"), type)
        }
        for type in ["nonstandard/json", "text/html"] {
            let r = try get(c, "/j/json?ct=\(type.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            let body = assertRejected(r, reason: "unacceptable-content-type", code: -1016)
            XCTAssertEqual(body["content_type"] as? String, type)
        }
    }

    func testInvalidJSONEmptyAndSingleSpace() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let invalid = try get(c, "/j/invalid")
        let body = assertRejected(invalid, reason: "invalid-json", code: -1017)
        let id = try XCTUnwrap(body["request_id"] as? String)
        XCTAssertEqual(rejectRecord(a, requestID: id)?["body_sample"] as? String, "{invalid}")
        let empty = try get(c, "/j/empty")
        XCTAssertEqual(empty.status, 200)
        XCTAssertEqual(empty.body, [])
        let space = try get(c, "/j/space")
        XCTAssertEqual(space.status, 200)
        XCTAssertEqual(space.bodyString, " ")
    }

    func testNullStrippingWithCorrectContentLength() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try get(c, "/jn/nulls")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Content-Length"), String(r.body.count))
        XCTAssertLessThan(r.body.count, Self.nulls.utf8.count)
        let object = Fixture.json(r.body)
        XCTAssertEqual(object["key"] as? String, "value")
        XCTAssertNil(object["nullkey"], r.bodyString)
        let array = try XCTUnwrap(object["array"] as? [Any])
        XCTAssertEqual(array.count, 1)
        XCTAssertEqual((array[0] as? [String: Any])?.count, 0, "array[0] is an empty object")
        XCTAssertEqual((object["arrayWithNulls"] as? [Any])?.count, 0, r.bodyString)

        // A chunked body is buffered, stripped and relayed with Content-Length framing.
        let chunked = try get(c, "/jn/chunked")
        XCTAssertEqual(chunked.status, 200)
        XCTAssertFalse(chunked.wasChunked)
        XCTAssertEqual(chunked.header("Content-Length"), String(chunked.body.count))
        XCTAssertEqual(Fixture.json(chunked.body)["chunked"] as? Bool, true)
        XCTAssertFalse(chunked.bodyString.contains("null"), chunked.bodyString)
        // Without the option the body is relayed as received.
        XCTAssertEqual(try get(c, "/j/chunked").bodyString, #"{"chunked":true,"n":null}"#)
    }

    /// A buffered body goes to a slow reader at its pace, whole; HEAD answers carry no body.
    func testLargeBufferedBodyToASlowReaderAndHEAD() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        c.setReceiveBuffer(64 * 1024)
        try c.send("GET /j/large HTTP/1.1\r\nHost: gw.test\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.5)
        let r = try c.readResponse(timeout: 20)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Content-Length"), String(Self.largeJSON.count))
        XCTAssertEqual(r.body, Self.largeJSON)
        let head = try get(c, "/j/json", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, [])
        XCTAssertEqual(head.header("Content-Length"), "22", "a HEAD answer keeps the upstream's Content-Length")
        XCTAssertEqual(try get(c, "/j/json").bodyString, #"{"a":[1,2,{"b":null}]}"#)
    }

    // MARK: xml, compound, limits

    func testXMLWellFormedAndMalformed() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let ok = try get(c, "/x/xml-ok")
        XCTAssertEqual(ok.status, 200)
        XCTAssertTrue(ok.bodyString.hasSuffix("<b/>t</a>"))
        assertRejected(try get(c, "/x/xml-bad"), reason: "invalid-xml", code: -1017)
    }

    func testCompoundImageOrJSON() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let json = try get(c, "/c/json")
        XCTAssertEqual(json.status, 200, "json wins after image declines")
        XCTAssertEqual(json.bodyString, #"{"a":[1,2,{"b":null}]}"#)
        let png = try get(c, "/c/png")
        XCTAssertEqual(png.status, 200)
        XCTAssertEqual(png.body, Self.png)
        assertRejected(try get(c, "/c/html"), reason: "unacceptable-content-type", code: -1016)
    }

    func testBodyLargerThanMaxBodyBytes() throws {
        let a = try start()
        for name in ["big", "big-chunked"] {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            let r = try get(c, "/s/\(name)")
            let body = assertRejected(r, status: 503, reason: "body-too-large", code: -1103)
            XCTAssertEqual(body["message"] as? String, "Response body exceeds the limit of 1000 bytes")
        }
    }

    // MARK: report-only

    func testReportOnlyRelaysUntouchedAndRecords() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let invalid = try get(c, "/r/invalid")
        XCTAssertEqual(invalid.status, 200)
        XCTAssertEqual(invalid.bodyString, "{invalid}")
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "response.rejected" && $0["route"] as? String == "report"
                && $0["reason"] as? String == "invalid-json"
        })
        XCTAssertEqual(record["mode"] as? String, "report-only")
        XCTAssertEqual(record["body_sample"] as? String, "{invalid}")

        // Rejected on the head: streamed as usual, sampled on the way.
        let notFound = try get(c, "/r/404")
        XCTAssertEqual(notFound.status, 404)
        XCTAssertEqual(notFound.header("Content-Type"), "text/html")
        let record404 = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "response.rejected" && $0["route"] as? String == "report" && $0["status"] as? Int == 404
        })
        XCTAssertEqual(record404["body_sample"] as? String, "<h1>no such thing</h1>\u{1}\u{FF}")

        // Over the limit: what was read, then the rest, all relayed.
        let big = try get(c, "/r/big-chunked")
        XCTAssertEqual(big.status, 200)
        XCTAssertEqual(big.body.count, 3003)
        XCTAssertNotNil(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "response.rejected" && $0["reason"] as? String == "body-too-large"
        })
        XCTAssertEqual(try get(c, "/r/json").status, 200)
    }

    func testRouteWithoutResponseBlockIsNotValidated() throws {
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let r = try get(c, "/p/invalid")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.bodyString, "{invalid}")
        XCTAssertEqual(try get(c, "/p/404").status, 404)
    }

    // MARK: admin and CLI

    func testRejectsEndpointAndCLI() throws {
        let a = try start()
        let admin = try adminPort(a)
        XCTAssertNotEqual(admin, a.port)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        _ = try get(c, "/j/invalid")
        _ = try get(c, "/a/404")
        _ = try get(c, "/a/html")
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "response.rejected" && $0["route"] as? String == "http" })

        let all = try Curl.run(["http://127.0.0.1:\(admin)/rejects"])
        XCTAssertEqual(all.exitCode, 0, all.stderr)
        let rejects = try XCTUnwrap(Fixture.json(all.stdout)["rejects"] as? [[String: Any]], all.stdoutString)
        XCTAssertEqual(rejects.map { $0["route"] as? String }, ["json", "http"])
        XCTAssertEqual(rejects[0]["reason"] as? String, "invalid-json")
        XCTAssertEqual(rejects[0]["body_sample"] as? String, "{invalid}")
        XCTAssertNotNil(rejects[1]["time"] as? String)

        let filtered = try Curl.run(["http://127.0.0.1:\(admin)/rejects?route=http&since=10m"])
        let only = try XCTUnwrap(Fixture.json(filtered.stdout)["rejects"] as? [[String: Any]])
        XCTAssertEqual(only.map { $0["route"] as? String }, ["http"])
        let old = try Curl.run(["http://127.0.0.1:\(admin)/rejects?since=0s"])
        XCTAssertEqual((Fixture.json(old.stdout)["rejects"] as? [Any])?.count, 0, old.stdoutString)

        let health = try Curl.run(["-w", "%{http_code}", "-o", "/dev/null", "http://127.0.0.1:\(admin)/healthz"])
        XCTAssertEqual(health.stdoutString, "200")
        let missing = try Curl.run(["-w", "\\n%{http_code}", "http://127.0.0.1:\(admin)/nowhere"])
        XCTAssertTrue(missing.stdoutString.hasSuffix("404"), missing.stdoutString)
        let post = try Curl.run(["-w", "\\n%{http_code}", "-X", "POST", "http://127.0.0.1:\(admin)/rejects"])
        XCTAssertTrue(post.stdoutString.hasSuffix("405"), post.stdoutString)
        let proxyPath = try get(c, "/rejects")
        XCTAssertEqual(proxyPath.bodyString, "unknown rejects", "the proxy listener does not serve /rejects")

        let exe = AirlockProcess.builtExecutable()
        let table = try runProcess(exe, ["rejects", "--admin", "127.0.0.1:\(admin)"])
        XCTAssertEqual(table.exitCode, 0, table.stderr)
        let lines = table.stdoutString.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, table.stdoutString)
        XCTAssertTrue(lines[0].hasPrefix("TIME"), table.stdoutString)
        XCTAssertTrue(lines[1].contains("json") && lines[1].contains("invalid-json") && lines[1].contains("/j/invalid"))
        XCTAssertTrue(lines[2].contains("http") && lines[2].contains("unacceptable-status") && lines[2].contains("404"))

        let route = try runProcess(exe, ["rejects", "--admin", "127.0.0.1:\(admin)", "--route", "json", "--since", "1h"])
        XCTAssertEqual(route.stdoutString.split(separator: "\n").count, 2, route.stdoutString)
        XCTAssertFalse(route.stdoutString.contains("unacceptable-status"))

        let json = try runProcess(exe, ["rejects", "--admin", "127.0.0.1:\(admin)", "--json", "--route", "http"])
        XCTAssertEqual((Fixture.json(json.stdout)["rejects"] as? [Any])?.count, 1, json.stdoutString)

        let unreachable = try runProcess(exe, ["rejects", "--admin", "127.0.0.1:\(unusedLoopbackPort())"])
        XCTAssertNotEqual(unreachable.exitCode, 0)
        XCTAssertTrue(unreachable.stderr.contains("cannot reach the admin listener"), unreachable.stderr)
    }
}
