import AirlockTesting
import Foundation
import XCTest

/// Issue #13, the request phase: a route's `request:` block rebuilds what goes upstream, by
/// AFHTTPRequestSerializer's rules. Real sockets, and an origin that records exactly what it
/// received.
final class RequestSerializerTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    /// Starts an origin and Airlock with one route whose `request:` block is `block`.
    private func start(_ block: String, environment: [String: String] = [:]) throws -> (TestOrigin, AirlockProcess) {
        let o = try TestOrigin(.respond { _ in .ok("ok") })
        origin = o
        let indented = block.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n")
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
                request:
            \(indented)
            """)
        airlock = a
        return (o, a)
    }

    /// Sends one request, expects `status`, and returns what the origin received (nil if nothing).
    @discardableResult
    private func send(_ a: AirlockProcess, _ o: TestOrigin, _ request: String, status: Int = 200,
                      file: StaticString = #filePath, line: UInt = #line) throws -> TestRequest? {
        let before = o.requests.count
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send(request)
        let r = try c.readResponse(timeout: 10)
        XCTAssertEqual(r.status, status, String(decoding: r.body, as: UTF8.self), file: file, line: line)
        guard status == 200 else { return nil }
        XCTAssertTrue(o.waitForRequests(before + 1, timeout: 5), file: file, line: line)
        return o.requests.last
    }

    func testParametersGoToTheQueryForGETByAFsRules() throws {
        let (o, a) = try start("""
            parameters: { key: value, key1: "value&", " :#[]@!$&'()*+,;=/?": " :#[]@!$&'()*+,;=/?" }
            """)
        let got = try XCTUnwrap(send(a, o, "GET /items HTTP/1.1\r\nHost: a\r\n\r\n"))
        let escaped = "%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?"
        XCTAssertEqual(got.target, "/items?\(escaped)=\(escaped)&key=value&key1=value%26")
        let withQuery = try XCTUnwrap(send(a, o, "DELETE /items?page=2 HTTP/1.1\r\nHost: a\r\n\r\n"))
        XCTAssertEqual(withQuery.target, "/items?page=2&\(escaped)=\(escaped)&key=value&key1=value%26",
                       "a target that already has a query gets &")
    }

    func testNestedParametersAndALongEmojiString() throws {
        let emoji = String(repeating: "👨‍👩‍👧‍👦🇫🇷", count: 40)
        let (o, a) = try start("""
            parameters: { filter: { state: open, tags: [a, b] }, e: "\(emoji)" }
            """)
        let got = try XCTUnwrap(send(a, o, "GET /s HTTP/1.1\r\nHost: a\r\n\r\n"))
        let query = String(got.target.dropFirst("/s?".count))
        let pairs = query.split(separator: "&").map(String.init)
        XCTAssertEqual(pairs.count, 4, query)
        guard pairs.count == 4 else { return }
        XCTAssertEqual(pairs[0].removingPercentEncoding, "e=\(emoji)", "multi-byte characters are never split")
        XCTAssertEqual(Array(pairs[1...]), ["filter%5Bstate%5D=open", "filter%5Btags%5D%5B%5D=a", "filter%5Btags%5D%5B%5D=b"])
    }

    func testEmptyParametersAppendNothing() throws {
        let (o, a) = try start("parameters: {}\nheaders: { X-Api-Version: \"2\" }")
        let got = try XCTUnwrap(send(a, o, "GET /plain HTTP/1.1\r\nHost: a\r\n\r\n"))
        XCTAssertEqual(got.target, "/plain")
    }

    func testPOSTParametersBecomeAFormBodyAndAnEmptyOneIsValid() throws {
        let (o, a) = try start("parameters: { key: value, n: ~ }")
        let got = try XCTUnwrap(send(a, o, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"))
        XCTAssertEqual(got.target, "/f")
        XCTAssertEqual(got.bodyString, "key=value&n")
        XCTAssertEqual(got.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(got.header("Content-Length"), "11")
        // A client's own content type is kept.
        let typed = try XCTUnwrap(send(a, o, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Type: text/x-mine\r\n\r\n"))
        XCTAssertEqual(typed.headers(named: "Content-Type"), ["text/x-mine"])
        XCTAssertEqual(typed.bodyString, "key=value&n")

        let (o2, a2) = try restart("headers: { X-A: b }")
        let empty = try XCTUnwrap(send(a2, o2, "POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"))
        XCTAssertEqual(empty.body, [], "POST with no parameters: an empty body")
        XCTAssertEqual(empty.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(empty.header("Content-Length"), "0")
    }

    func testABodyTheClientSentIsNotMergedYetButRefusedWithNothingUpstream() throws {
        let (o, a) = try start("parameters: { key: value }")
        try send(a, o, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b",
                 status: 400)
        XCTAssertEqual(o.acceptedConnections, 0)
        // With no route parameters the client's body goes up untouched.
        let (o2, a2) = try restart("headers: { X-A: b }")
        let got = try XCTUnwrap(send(a2, o2, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"))
        XCTAssertEqual(got.bodyString, "{\"a\":1}")
        XCTAssertEqual(got.header("Content-Type"), "application/json")
    }

    /// A request the request phase refuses is recorded like a rejected response: a
    /// `request.rejected` log record with a sample of the body, and an entry in the admin's
    /// reject list, `side=request` (`side=response` lists the response rejects; none: both).
    func testARefusedRequestIsRecordedLikeAResponseReject() throws {
        let o = try TestOrigin(.respond { _ in .ok("not json") })
        origin = o
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            admin: 127.0.0.1:0
            \(Fixture.limitsYAML([:]))
            routes:
              - name: json
                match: { host: "*", path_prefix: /j/ }
                upstream: http://127.0.0.1:\(o.port)
                response: { serializer: json }
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(o.port)
                request: { parameters: { key: value } }
            """)
        airlock = a
        let adminRecord = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let admin = try XCTUnwrap(adminRecord["port"] as? Int)
        try send(a, o, "POST /f?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b",
                 status: 400)
        let big = String(repeating: "0123456789", count: 150)
        try send(a, o, "PUT /big HTTP/1.1\r\nHost: a\r\nContent-Length: \(big.utf8.count)\r\n\r\n\(big)", status: 400)
        try send(a, o, "GET /j/x HTTP/1.1\r\nHost: a\r\n\r\n", status: 502)
        XCTAssertEqual(o.acceptedConnections, 1, "only the response reject reached the origin")

        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.rejected" })
        XCTAssertEqual(record["route"] as? String, "api")
        XCTAssertEqual(record["method"] as? String, "POST")
        XCTAssertEqual(record["target"] as? String, "/f?x=1")
        XCTAssertEqual(record["reason"] as? String, "client-body-with-parameters")
        XCTAssertFalse((record["message"] as? String ?? "").isEmpty)
        XCTAssertEqual(record["body_sample"] as? String, "a=b")
        XCTAssertNotNil(record["request_id"] as? String)
        let bigRecord = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "request.rejected" && $0["method"] as? String == "PUT"
        })
        XCTAssertEqual(bigRecord["body_sample"] as? String, String(big.prefix(1024)), "a sample of 1 KiB")
        XCTAssertNotNil(a.waitForLog(timeout: 5) { $0["event"] as? String == "response.rejected" })

        func rejects(_ query: String) throws -> [[String: Any]] {
            let r = try Curl.run(["http://127.0.0.1:\(admin)/rejects\(query)"])
            XCTAssertEqual(r.exitCode, 0, r.stderr)
            return try XCTUnwrap(Fixture.json(r.stdout)["rejects"] as? [[String: Any]], r.stdoutString)
        }
        let requests = try rejects("?side=request")
        XCTAssertEqual(requests.map { $0["url"] as? String }, ["/f?x=1", "/big"])
        XCTAssertEqual(requests.map { $0["side"] as? String }, ["request", "request"])
        XCTAssertEqual(requests.first?["reason"] as? String, "client-body-with-parameters")
        XCTAssertEqual(requests.first?["request_id"] as? String, record["request_id"] as? String)
        XCTAssertEqual(requests.first?["body_sample"] as? String, "a=b")
        let responses = try rejects("?side=response")
        XCTAssertEqual(responses.map { $0["route"] as? String }, ["json"])
        XCTAssertEqual(responses.first?["side"] as? String, "response")
        XCTAssertEqual(try rejects("").map { $0["route"] as? String }, ["api", "api", "json"], "no side: both, oldest first")
        XCTAssertEqual(try rejects("?side=request&route=json").count, 0)
        let bad = try Curl.run(["-w", "\\n%{http_code}", "http://127.0.0.1:\(admin)/rejects?side=upstream"])
        XCTAssertTrue(bad.stdoutString.hasSuffix("\n400"), bad.stdoutString)
    }

    func testDefaultHeadersOverridesRemovalsAndBasicAuth() throws {
        let (o, a) = try start("""
            headers: { X-Api-Version: "2", Accept: application/json }
            override_headers: { User-Agent: "airlock/1" }
            remove_headers: [Cookie]
            authorization: { basic: { username: u, password: p } }
            """)
        let bare = try XCTUnwrap(send(a, o, "GET /h HTTP/1.1\r\nHost: a\r\nUser-Agent: app/9\r\nCookie: s=1\r\nCookie: t=2\r\n\r\n"))
        XCTAssertEqual(bare.headers(named: "X-Api-Version"), ["2"])
        XCTAssertEqual(bare.headers(named: "Accept"), ["application/json"])
        XCTAssertEqual(bare.headers(named: "User-Agent"), ["airlock/1"], "override_headers replaces the client's")
        XCTAssertEqual(bare.headers(named: "Cookie"), [], "remove_headers")
        XCTAssertEqual(bare.headers(named: "Authorization"), ["Basic dTpw"])
        let own = try XCTUnwrap(send(a, o, "GET /h HTTP/1.1\r\nHost: a\r\nX-Api-Version: 3\r\naccept: text/plain\r\nAuthorization: Bearer mine\r\n\r\n"))
        XCTAssertEqual(own.headers(named: "X-Api-Version"), ["3"], "a default never overrides the client's value")
        XCTAssertEqual(own.headers(named: "Accept"), ["text/plain"])
        XCTAssertEqual(own.headers(named: "Authorization"), ["Bearer mine"], "as AF: the route's authorization is a default")
    }

    func testPassthroughSendsParametersToTheQueryAndLeavesTheBody() throws {
        let (o, a) = try start("serializer: passthrough\nparameters: { k: v }")
        let got = try XCTUnwrap(send(a, o, "POST /p HTTP/1.1\r\nHost: a\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\n\u{1}\u{2}\u{3}\u{4}"))
        XCTAssertEqual(got.target, "/p?k=v")
        XCTAssertEqual(got.body, [1, 2, 3, 4])
    }

    private func restart(_ block: String) throws -> (TestOrigin, AirlockProcess) {
        airlock?.stop()
        origin?.stop()
        return try start(block)
    }
}
