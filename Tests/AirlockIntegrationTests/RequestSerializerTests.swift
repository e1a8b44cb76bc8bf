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

    func testAClientFormBodyIsMergedWithTheRouteParameters() throws {
        let (o, a) = try start("parameters: { key: value, a: route }")
        let got = try XCTUnwrap(send(a, o, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 13\r\n\r\na=b&z%5B%5D=1"))
        XCTAssertEqual(got.bodyString, "a=route&key=value&z%5B%5D=1", "the route wins a shared key; sorted as AF")
        XCTAssertEqual(got.header("Content-Length"), "27")
        // A body that is not a form cannot take the parameters: 400, nothing upstream (counted
        // in requests: a pooled connection would carry one without a new connection).
        let before = o.acceptedConnections
        let requestsBefore = o.requestCount
        try send(a, o, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", status: 400)
        XCTAssertEqual(o.acceptedConnections, before)
        XCTAssertTrue(o.receivesNoRequest(beyond: requestsBefore), "reached the origin: \(o.requests.map(\.target))")
        // With no route parameters the client's body goes up untouched.
        let (o2, a2) = try restart("headers: { X-A: b }")
        let untouched = try XCTUnwrap(send(a2, o2, "POST /f HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"))
        XCTAssertEqual(untouched.bodyString, "{\"a\":1}")
        XCTAssertEqual(untouched.header("Content-Type"), "application/json")
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
        try send(a, o, "POST /f?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\na=b",
                 status: 400)
        let big = String(repeating: "0123456789", count: 150)
        try send(a, o, "PUT /big HTTP/1.1\r\nHost: a\r\nContent-Length: \(big.utf8.count)\r\n\r\n\(big)", status: 400)
        try send(a, o, "GET /j/x HTTP/1.1\r\nHost: a\r\n\r\n", status: 502)
        XCTAssertEqual(o.acceptedConnections, 1, "only the response reject reached the origin")
        XCTAssertTrue(o.receivesNoRequest(beyond: 1), "reached the origin: \(o.requests.map(\.target))")
        XCTAssertEqual(o.requests.map(\.target), ["/j/x"], "only the response reject reached the origin")

        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.rejected" })
        XCTAssertEqual(record["route"] as? String, "api")
        XCTAssertEqual(record["method"] as? String, "POST")
        XCTAssertEqual(record["target"] as? String, "/f?x=1")
        XCTAssertEqual(record["reason"] as? String, "unmergeable-body")
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
        XCTAssertEqual(requests.first?["reason"] as? String, "unmergeable-body")
        XCTAssertEqual(requests.first?["request_id"] as? String, record["request_id"] as? String)
        XCTAssertEqual(requests.first?["body_sample"] as? String, "a=b")
        let responses = try rejects("?side=response")
        XCTAssertEqual(responses.map { $0["route"] as? String }, ["json"])
        XCTAssertEqual(responses.first?["side"] as? String, "response")
        XCTAssertEqual(try rejects("").map { $0["route"] as? String }, ["api", "api", "json"], "no side: both, oldest first")
        XCTAssertEqual(try rejects("?side=request&route=json").count, 0)
        let bad = try Curl.run(["-w", "\\n%{http_code}", "http://127.0.0.1:\(admin)/rejects?side=upstream"])
        XCTAssertTrue(bad.stdoutString.hasSuffix("\n400"), bad.stdoutString)
        // The CLI, as a user runs it: `airlock rejects --side request` (a table of the two).
        let cli = try runProcess(AirlockProcess.builtExecutable(), ["rejects", "--admin", "127.0.0.1:\(admin)", "--side", "request"])
        XCTAssertEqual(cli.exitCode, 0, cli.stderr)
        let lines = cli.stdoutString.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, cli.stdoutString)
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.contains(" api ") && $0.contains(" 400 ") }, cli.stdoutString)
        XCTAssertFalse(cli.stdoutString.contains(" json "), "no response rejects: \(cli.stdoutString)")
        let wrong = try runProcess(AirlockProcess.builtExecutable(), ["rejects", "--admin", "127.0.0.1:\(admin)", "--side", "upstream"])
        XCTAssertNotEqual(wrong.exitCode, 0)
        XCTAssertTrue(wrong.stderr.contains("--side"), wrong.stderr)
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

    func testJSONTurnsAFormBodyIntoAJSONObject() throws {
        let (o, a) = try start("serializer: json\nparameters: { api_key: k }")
        let form = "a%5Bb%5D=1&list%5B%5D=1&list%5B%5D=2&name=J+Doe"
        let got = try XCTUnwrap(send(a, o, "POST /j HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n\(form)"))
        XCTAssertEqual(got.headers(named: "Content-Type"), ["application/json"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(got.body)) as? NSDictionary)
        XCTAssertEqual(object, ["a": ["b": "1"], "list": ["1", "2"], "name": "J Doe", "api_key": "k"] as NSDictionary)
        // Chunked, and with Expect: 100-continue: read whole, then rebuilt.
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("POST /j HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nx=1\r\n4\r\n&y=2\r\n0\r\n\r\n")
        XCTAssertEqual(try c.readResponse(timeout: 10).status, 200)
        let chunked = try XCTUnwrap(o.requests.last)
        XCTAssertEqual(try JSONSerialization.jsonObject(with: Data(chunked.body)) as? NSDictionary,
                       ["x": "1", "y": "2", "api_key": "k"] as NSDictionary)
        XCTAssertEqual(chunked.header("Content-Length"), String(chunked.body.count))
        // GET keeps its parameters in the query.
        XCTAssertEqual(try XCTUnwrap(send(a, o, "GET /j HTTP/1.1\r\nHost: a\r\n\r\n")).target, "/j?api_key=k")
    }

    func testAnInvalidFormBodyOnAJSONRouteIs400AndTheOriginSeesNoConnection() throws {
        let (o, a) = try start("serializer: json")
        for body in ["a=%zz", "a=1&a%5Bb%5D=2", "%FF=1"] {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send("POST /j HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let r = try c.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 400, body)
            let json = try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]
            XCTAssertEqual(json?["error"] as? String, "request-serialization-failed", body)
            XCTAssertNotNil(json?["reason"] as? String, body)
            XCTAssertNotNil(json?["request_id"] as? String, body)
        }
        XCTAssertEqual(o.acceptedConnections, 0)
    }

    func testPlistProducesAPropertyListPythonReadsBack() throws {
        try Requirement.tool("/usr/bin/python3")
        let (o, a) = try start("serializer: plist\nparameters: { filter: { state: open, tags: [a, b] } }")
        let form = "q=caf%C3%A9+%3C%26%3E"
        let got = try XCTUnwrap(send(a, o, "PUT /p HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n\r\n\(form)"))
        XCTAssertEqual(got.headers(named: "Content-Type"), ["application/x-plist"])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-plist-\(getpid()).plist")
        try Data(got.body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", "import plistlib,json,sys; print(json.dumps(plistlib.load(open(sys.argv[1],'rb')), sort_keys=True))", file.path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(text.trimmingCharacters(in: .whitespacesAndNewlines),
                       #"{"filter": {"state": "open", "tags": ["a", "b"]}, "q": "caf\u00e9 <&>"}"#)
    }

    private func multipart(_ boundary: String, _ parts: String, close: Bool = true) -> String {
        parts + (close ? "--\(boundary)--\r\n" : "")
    }

    func testMultipartBodiesAreValidatedWhileTheyStream() throws {
        let (o, a) = try start("validate_multipart: true")
        let b = "XyZ-boundary-42"
        let good = multipart(b, "--\(b)\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bin\"\r\n\r\n"
                                + "bytes --\(b) inline, not a delimiter\r\n--\(b)\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nhello\r\n")
        let head = "POST /up HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=\(b)\r\n"
        let got = try XCTUnwrap(send(a, o, head + "Content-Length: \(good.utf8.count)\r\n\r\n" + good))
        XCTAssertEqual(got.bodyString, good, "a valid body arrives whole and unchanged")
        // Chunked, in many small chunks.
        let chunks = stride(from: 0, to: good.utf8.count, by: 7).map { i -> String in
            let part = Array(good.utf8)[i..<min(i + 7, good.utf8.count)]
            return String(part.count, radix: 16) + "\r\n" + String(decoding: part, as: UTF8.self) + "\r\n"
        }.joined()
        let chunked = try XCTUnwrap(send(a, o, head + "Transfer-Encoding: chunked\r\n\r\n" + chunks + "0\r\n\r\n"))
        XCTAssertEqual(chunked.bodyString, good)

        // Broken bodies: 400, and the origin never gets a whole request (the last bytes, the
        // close delimiter, were held back).
        let requestsBefore = o.requests.count
        let broken: [(String, String, String)] = [
            ("no close delimiter", multipart(b, "--\(b)\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n", close: false), "multipart-truncated"),
            ("no Content-Disposition", multipart(b, "--\(b)\r\nX-Other: 1\r\n\r\nx\r\n"), "multipart-no-disposition"),
            ("header without colon", multipart(b, "--\(b)\r\nContent-Disposition: form-data; name=\"f\"\r\nbroken\r\n\r\nx\r\n"), "multipart-bad-header"),
        ]
        for (name, body, reason) in broken {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send(head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
            let r = try c.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 400, name)
            let json = try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]
            XCTAssertEqual(json?["error"] as? String, "request-serialization-failed", name)
            XCTAssertEqual(json?["reason"] as? String, reason, name)
        }
        usleep(200_000)
        XCTAssertEqual(o.requests.count, requestsBefore, "no broken body reached the origin whole")

        // A bad boundary is refused before any upstream connection (and so before any request
        // on a pooled one); other bodies are not checked.
        let connections = o.acceptedConnections
        let requests = o.requestCount
        try send(a, o, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=\"\"\r\nContent-Length: 2\r\n\r\nxx",
                 status: 400)
        XCTAssertEqual(o.acceptedConnections, connections)
        XCTAssertTrue(o.receivesNoRequest(beyond: requests), "reached the origin: \(o.requests.map(\.target))")
        let plain = try XCTUnwrap(send(a, o, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nxx"))
        XCTAssertEqual(plain.bodyString, "xx")
    }

    /// The close delimiter is held back: a body cut off inside it (sent in two writes, the
    /// gateway flushing between them) reaches the upstream without it, then the connection closes.
    func testTheCloseDelimiterIsHeldBackUntilTheBodyIsKnownWhole() throws {
        let up = try RecordingListener()
        defer { up.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(up.port)
                request: { validate_multipart: true }
            """)
        airlock = a
        let b = "bnd"
        let body = "--\(b)\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\ncontent\r\n--\(b)-"
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("POST /up HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; boundary=\(b)\r\n"
                   + "Content-Length: \(body.utf8.count)\r\n\r\n" + String(body.dropLast()))
        usleep(300_000)   // what the gateway forwards of it has reached the upstream
        let before = up.connections.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        XCTAssertTrue(before.hasSuffix("\r\n\r\ncontent"), "everything but what may be the close delimiter: \(before.suffix(40))")
        try c.send("-")
        XCTAssertEqual(try c.readResponse(timeout: 10).status, 400)
        usleep(200_000)
        let after = up.connections.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        XCTAssertFalse(after.contains("content\r\n--\(b)"), "the upstream never saw the (broken) close delimiter")
    }

    /// throttle: the body goes up in packets of at most packet_bytes with the delay between
    /// them, visible in when the upstream receives its bytes; the worker keeps serving others.
    func testThrottlePacesTheUploadWithoutBlockingTheWorker() throws {
        let up = try RecordingListener()
        defer { up.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: fast
                match: { host: fast.test }
                upstream: http://127.0.0.1:\(up.port)
              - name: slow
                match: { host: "*" }
                upstream: http://127.0.0.1:\(up.port)
                request: { throttle: { packet_bytes: 1000, delay: 0.3s } }
            """)
        airlock = a
        let body = String(repeating: "z", count: 3500)   // 4 packets: 3 delays of 0.3 s
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let start = Date()
        try c.send("POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 3500\r\n\r\n" + body)
        /// Body bytes the upstream has of the slow request (its first connection) now.
        func slowBody() -> Int {
            guard let bytes = up.connections.first else { return 0 }
            let text = String(decoding: bytes, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { return 0 }
            return text[end.upperBound...].utf8.count
        }
        usleep(100_000)
        // The same worker serves another request at once while the slow one waits for its timer.
        let other = try RawClient(port: a.port)
        defer { other.close() }
        try other.send("POST /x HTTP/1.1\r\nHost: fast.test\r\nContent-Length: 2\r\n\r\nhi")
        let deadline = Date().addingTimeInterval(2)
        while up.connections.count < 2 && Date() < deadline { usleep(5_000) }
        XCTAssertEqual(up.connections.count, 2, "the other request reached the upstream")
        XCTAssertLessThan(slowBody(), 3500, "while the slow one was still waiting for its timers")
        if Date().timeIntervalSince(start) < 0.29 {
            XCTAssertLessThanOrEqual(slowBody(), 1000, "before the first delay ends: the first packet only")
        }
        while Date().timeIntervalSince(start) < 0.5 { usleep(5_000) }
        XCTAssertLessThanOrEqual(slowBody(), 2000, "0.5 s in: two packets at most")
        while slowBody() < 3500 && Date().timeIntervalSince(start) < 5 { usleep(10_000) }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(slowBody(), 3500, "all of it in the end")
        XCTAssertGreaterThanOrEqual(elapsed, 0.85, "three delays of 0.3 s")
        XCTAssertLessThan(elapsed, 3)
    }

    private func restart(_ block: String) throws -> (TestOrigin, AirlockProcess) {
        airlock?.stop()
        origin?.stop()
        return try start(block)
    }
}
