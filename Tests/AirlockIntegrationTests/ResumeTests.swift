import AirlockTesting
import Foundation
import XCTest

/// Issue #21: a GET download whose upstream connection breaks mid-body is continued
/// transparently (`routes[].resume`, on by default): Airlock asks for the rest with `Range` and
/// `If-Range` and splices it into the client's body only when it is exactly the rest of the
/// same representation. Real clients (curl, Python's http.client) see one response, byte-exact;
/// every refusal ends as a truncation they detect, never a wrong byte.
final class ResumeTests: XCTestCase {
    /// What the cutting origin sends. `cuts`: body bytes each successive response carries before
    /// the origin closes (nil: the rest in full); the representation is `size` pattern bytes.
    struct Script: Sendable {
        var size = 3 * 1024 * 1024 + 17
        var etag: String? = "\"v1\""
        var lastModified: String?
        var date: String?
        var acceptRanges: String? = "bytes"
        var chunked = false
        /// The ETag a range response carries instead (a changed representation).
        var rangeETag: String?
        /// A range request is answered 200 with the whole body (a server that ignores Range).
        var ignoreRange = false
        /// A range response's Content-Range total length instead of the size.
        var rangeTotal: Int?
        /// Per response, in order: body bytes sent before the close (nil: the rest, whole).
        var cuts: [Int?]
        /// The representation: pattern bytes, or this body (a JSON document for a validating route).
        var body: [UInt8]? = nil
        /// Responses (by index) that close without a byte: a resumed request cut before its head.
        var silent: Set<Int> = []
    }

    /// Thread-safe count of the responses the origin began (each takes the next cut).
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func next() -> Int { lock.withLock { defer { n += 1 }; return n } }
    }

    private var origin: TestOrigin?
    private var airlock: AirlockProcess?
    private var directory: String?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The origin: one response per connection, cut after the script's next count of body bytes.
    private func start(_ script: Script, resume: String? = nil, extra: String = "") throws -> (TestOrigin, AirlockProcess) {
        let counter = Counter()
        let body = script.body ?? patternBytes(count: script.size)
        let o = try TestOrigin(.raw { request in
            let i = counter.next()
            if script.silent.contains(i) { return [] }
            return Self.respond(request, script, body, cut: script.cuts.indices.contains(i) ? script.cuts[i] : nil)
        })
        origin = o
        var yaml = Fixture.gatewayConfig(upstreamPort: o.port, workers: 1)
        if let resume { yaml += "\n    resume: \(resume)" }
        yaml += extra
        let a = try Fixture.start(yaml + "\nadmin: 127.0.0.1:0\n")
        airlock = a
        return (o, a)
    }

    /// One response: the rest from the request's `Range` (206) or the whole (200), its body
    /// cut after `cut` bytes (the connection then closes), or whole when `cut` is nil.
    private static func respond(_ request: TestRequest, _ s: Script, _ body: [UInt8], cut: Int?) -> [UInt8] {
        var from = 0
        var partial = false
        if let range = request.header("Range"), range.hasPrefix("bytes="), !s.ignoreRange {
            let spec = range.dropFirst("bytes=".count)
            from = Int(spec.split(separator: "-", omittingEmptySubsequences: false)[0]) ?? 0
            partial = true
            if let ifRange = request.header("If-Range"), let etag = s.etag, ifRange != etag {
                partial = false   // If-Range does not match: the whole representation (RFC 9110 13.1.5)
                from = 0
            }
        }
        let rest = Array(body[from...])
        var head = partial ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n"
        head += "Content-Type: application/octet-stream\r\n"
        if let tag = partial ? (s.rangeETag ?? s.etag) : s.etag { head += "ETag: \(tag)\r\n" }
        if let lm = s.lastModified { head += "Last-Modified: \(lm)\r\n" }
        if let d = s.date { head += "Date: \(d)\r\n" }
        if let ar = s.acceptRanges { head += "Accept-Ranges: \(ar)\r\n" }
        if partial { head += "Content-Range: bytes \(from)-\(body.count - 1)/\(s.rangeTotal ?? body.count)\r\n" }
        head += s.chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(rest.count)\r\n"
        head += "Connection: close\r\n\r\n"
        let send = cut.map { min($0, rest.count - 1) } ?? rest.count
        var out = Array(head.utf8)
        if s.chunked {
            var i = 0
            while i < send {
                let n = min(64 * 1024, send - i)
                out += Array("\(String(n, radix: 16))\r\n".utf8) + rest[i..<(i + n)] + Array("\r\n".utf8)
                i += n
            }
            if send == rest.count { out += Array("0\r\n\r\n".utf8) }
        } else {
            out += rest[0..<send]
        }
        return out
    }

    // MARK: helpers

    /// SplitMix64: the cut points, reproducible from the seed printed on failure.
    struct Seeded {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    private func tempDirectory() throws -> String {
        let d = try makeTemporaryDirectory(prefix: "airlock-resume")
        directory = d
        return d
    }

    private func curl(_ a: AirlockProcess, _ path: String, to file: String, _ extra: [String] = []) throws -> ProcessResult {
        try Curl.run(["-o", file, "-H", "Host: dl.test"] + extra + ["http://127.0.0.1:\(a.port)\(path)"], timeout: 20)
    }

    private func bytes(_ file: String) -> [UInt8] {
        (FileManager.default.contents(atPath: file)).map { [UInt8]($0) } ?? []
    }

    private func metric(_ a: AirlockProcess, result: String) throws -> Double {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let admin = try RawClient(port: UInt16(try XCTUnwrap(record["port"] as? Int)))
        defer { admin.close() }
        let text = try PrometheusText(try admin.exchange("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n").body)
        return text.value("airlock_resumes_total", ["route": "api", "result": result]) ?? 0
    }

    // MARK: resumed

    /// Several cuts per download at seeded random points, Content-Length and chunked framing,
    /// through curl: every download arrives whole (SHA-256 equal), each resumed request asked
    /// for exactly the next byte with the strong ETag, and the records count the resumes.
    func testCurlDownloadsCutSeveralTimesArriveWhole() throws {
        try PrometheusText.requireParser()
        let dir = try tempDirectory()
        for chunked in [false, true] {
            let size = 3 * 1024 * 1024 + 17
            let downloads = 4
            var rng = Seeded(state: chunked ? 21 : 12)
            var cuts: [Int?] = []
            for _ in 0..<downloads {
                // Three cuts, each inside what is left (1 byte up to most of the rest), then the rest.
                var left = size
                for _ in 0..<3 {
                    let c = 1 + rng.next(max(1, left * 3 / 4))
                    cuts.append(c)
                    left -= c
                }
                cuts.append(nil)
            }
            let (o, a) = try start(Script(chunked: chunked, cuts: cuts))
            let expected = try sha256Hex(patternBytes(count: size))
            for d in 0..<downloads {
                let file = "\(dir)/\(chunked ? "chunked" : "length")-\(d)"
                let r = try curl(a, "/big", to: file)
                XCTAssertEqual(r.exitCode, 0, "download \(d) (chunked: \(chunked), cuts \(cuts[(d * 4)..<(d * 4 + 3)])): \(r.stderr)")
                XCTAssertEqual(bytes(file).count, size, "download \(d)")
                XCTAssertEqual(try sha256Hex(file: file), expected, "download \(d): byte-exact")
            }
            // Each resumed request asked for the next byte after what the client had, with If-Range.
            let requests = o.requests
            XCTAssertEqual(requests.count, downloads * 4, "one request and three resumed ones per download")
            guard requests.count == downloads * 4 else { return }
            for d in 0..<downloads {
                var relayed = 0
                for k in 0..<4 {
                    let req = requests[d * 4 + k]
                    if k == 0 {
                        XCTAssertNil(req.header("Range"), "the first request is the client's")
                    } else {
                        XCTAssertEqual(req.header("Range"), "bytes=\(relayed)-", "download \(d), resume \(k)")
                        XCTAssertEqual(req.header("If-Range"), "\"v1\"")
                    }
                    relayed += cuts[d * 4 + k] ?? 0
                }
            }
            let records = Fixture.accessRecords(a, count: downloads, timeout: 5).filter { $0["target"] as? String == "/big" }
            XCTAssertEqual(records.count, downloads)
            for record in records {
                XCTAssertEqual(record["resumed"] as? Int, 3)
                XCTAssertEqual(record["status"] as? Int, 200)
                XCTAssertNil(record["incomplete"])
                XCTAssertEqual(record["bytes_out"] as? Int, size)
            }
            XCTAssertEqual(try metric(a, result: "resumed"), Double(downloads * 3))
            a.stop()
            o.stop()
        }
    }

    /// Python's http.client reads the Content-Length body to its end: two cuts, one response.
    func testPythonReadsOneWholeResponse() throws {
        let size = 2 * 1024 * 1024 + 3
        let (_, a) = try start(Script(size: size, cuts: [700_001, 65_536, nil]))
        let script = """
            import hashlib, http.client, sys
            c = http.client.HTTPConnection("127.0.0.1", \(a.port), timeout=15)
            c.request("GET", "/py", headers={"Host": "dl.test"})
            r = c.getresponse()
            body = r.read()
            print(r.status, len(body), hashlib.sha256(body).hexdigest())
            """
        let r = try runProcess("/usr/bin/python3", ["-c", script], timeout: 30)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines),
                       "200 \(size) \(try sha256Hex(patternBytes(count: size)))")
    }

    /// The client's own range: its offset is kept (`Range: bytes=1000+N-`), and what it gets is
    /// exactly the representation from byte 1000.
    func testTheClientsOwnRangeIsContinued() throws {
        let dir = try tempDirectory()
        let size = 1024 * 1024
        let (o, a) = try start(Script(size: size, cuts: [5000, nil]))
        let file = "\(dir)/range"
        let r = try curl(a, "/part", to: file, ["-r", "1000-"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertTrue(bytes(file) == Array(patternBytes(count: size)[1000...]), "the representation from byte 1000")
        XCTAssertEqual(o.requests.map { $0.header("Range") }, ["bytes=1000-", "bytes=6000-"])
    }

    /// No ETag, a `Last-Modified` two minutes older than `Date` (strong, RFC 9110 8.8.2.2): the
    /// date goes in `If-Range`, exactly as the origin wrote it.
    func testAnOldLastModifiedIsAStrongValidator() throws {
        let dir = try tempDirectory()
        let lm = "Tue, 24 Nov 2026 10:00:00 GMT"
        let (o, a) = try start(Script(size: 500_000, etag: nil, lastModified: lm, date: "Tue, 24 Nov 2026 10:02:00 GMT",
                                      cuts: [123_456, nil]))
        let file = "\(dir)/lm"
        let r = try curl(a, "/lm", to: file)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertTrue(bytes(file) == patternBytes(count: 500_000), "\(bytes(file).count) bytes, whole and right")
        XCTAssertEqual(o.requests.last?.header("If-Range"), lm)
    }

    // MARK: refused

    /// Each case in which the rest cannot be trusted to continue the body: the client gets the
    /// bytes that came, all of them right, then a cut it detects (curl's exit code, a short
    /// file); nothing is spliced. `requests`: what the origin saw (2: a resume was tried and its
    /// answer refused). `result`: the `airlock_resumes_total` label.
    func testEveryRefusalEndsAsADetectableTruncation() throws {
        try PrometheusText.requireParser()
        let dir = try tempDirectory()
        let cut = 100_000
        let cases: [(name: String, script: Script, method: String, requests: Int, result: String)] = [
            ("200 instead of 206", Script(size: 400_000, ignoreRange: true, cuts: [cut, nil]), "GET", 2, "not-partial"),
            ("changed ETag", Script(size: 400_000, rangeETag: "\"v2\"", cuts: [cut, nil]), "GET", 2, "etag-changed"),
            ("changed length", Script(size: 400_000, rangeTotal: 500_000, cuts: [cut, nil]), "GET", 2, "length-changed"),
            ("weak ETag", Script(size: 400_000, etag: "W/\"v1\"", cuts: [cut, nil]), "GET", 1, "weak-etag"),
            ("no validator", Script(size: 400_000, etag: nil, cuts: [cut, nil]), "GET", 1, "no-validator"),
            ("Accept-Ranges: none", Script(size: 400_000, acceptRanges: "none", cuts: [cut, nil]), "GET", 1, "ranges-refused"),
            ("a POST", Script(size: 400_000, cuts: [cut, nil]), "POST", 1, "method"),
            ("attempts used up", Script(size: 400_000, cuts: [cut, 10, 10, 10, nil]), "GET", 4, "attempts-exhausted"),
        ]
        let whole = patternBytes(count: 400_000)
        for c in cases {
            let (o, a) = try start(c.script)
            let file = "\(dir)/\(c.result)"
            let r = try curl(a, "/refused", to: file, c.method == "POST" ? ["-X", "POST", "-d", "x"] : [])
            XCTAssertNotEqual(r.exitCode, 0, "\(c.name): the client must see the cut")
            let got = bytes(file)
            XCTAssertLessThan(got.count, whole.count, c.name)
            XCTAssertTrue(got == Array(whole.prefix(got.count)), "\(c.name): every byte the client got is right")
            XCTAssertEqual(o.requests.count, c.requests, c.name)
            let record = Fixture.accessRecords(a, count: 1, timeout: 5).first { $0["target"] as? String == "/refused" }
            XCTAssertEqual(record?["incomplete"] as? Bool, true, c.name)
            // Resumes that did continue the body are counted; the refused one is not.
            XCTAssertEqual(record?["resumed"] as? Int, c.result == "attempts-exhausted" ? 3 : nil, c.name)
            XCTAssertEqual(try metric(a, result: c.result), 1, c.name)
            a.stop()
            o.stop()
        }
    }

    /// `resume: { enabled: false }`: a cut is a cut, as before.
    func testResumeCanBeTurnedOff() throws {
        let dir = try tempDirectory()
        let (o, a) = try start(Script(size: 300_000, cuts: [1000, nil]), resume: "{ enabled: false }")
        let r = try curl(a, "/off", to: "\(dir)/off")
        XCTAssertNotEqual(r.exitCode, 0)
        XCTAssertEqual(bytes("\(dir)/off").count, 1000)
        XCTAssertEqual(o.requests.count, 1)
    }

    // MARK: a validating route

    /// A route with a body validator reads the body whole before the client sees anything: a
    /// cut there is resumed into the validator's buffer, and the validator judges the whole
    /// body (a spliced or partial JSON document would fail it). A refused rest is answered 502.
    func testABodyReadForTheValidatorIsResumedAndJudgedWhole() throws {
        let dir = try tempDirectory()
        var json = Array("{\"data\":\"".utf8)
        json += (0..<600_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        json += Array("\"}".utf8)
        let validating = "\n    response:\n      serializer: json\n      acceptable_content_types: [application/octet-stream]"
        let (o, a) = try start(Script(size: json.count, cuts: [100_000, 250_000, nil], body: json), extra: validating)
        let file = "\(dir)/json"
        let r = try curl(a, "/doc", to: file, ["-w", "%{http_code}"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertEqual(r.stdoutString, "200")
        XCTAssertTrue(bytes(file) == json, "\(bytes(file).count) of \(json.count) bytes")
        XCTAssertEqual(o.requests.map { $0.header("Range") }, [nil, "bytes=100000-", "bytes=350000-"])
        let record = Fixture.accessRecords(a, count: 1, timeout: 5).first { $0["target"] as? String == "/doc" }
        XCTAssertEqual(record?["resumed"] as? Int, 2)
        a.stop()
        o.stop()

        // Another ETag on the rest: nothing was sent, so the client gets the 502, not a part.
        let (_, b) = try start(Script(size: json.count, rangeETag: "\"v2\"", cuts: [100_000, nil], body: json), extra: validating)
        let refused = try curl(b, "/doc", to: "\(dir)/refused", ["-w", "%{http_code}"])
        XCTAssertEqual(refused.stdoutString, "502")
        XCTAssertEqual(Fixture.json(bytes("\(dir)/refused"))["error"] as? String, "upstream-closed")
    }

    /// The connection of a resumed request closes before its head, twice: each is another
    /// cut, and the next attempt (with the same `Range`) brings the rest.
    func testAResumedRequestCutBeforeItsHeadIsTriedAgain() throws {
        let dir = try tempDirectory()
        let size = 400_000
        let (o, a) = try start(Script(size: size, cuts: [150_000, nil, nil, nil], silent: [1]))
        let file = "\(dir)/again"
        let r = try curl(a, "/again", to: file)
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertTrue(bytes(file) == patternBytes(count: size), "\(bytes(file).count) bytes, whole and right")
        XCTAssertEqual(o.requests.map { $0.header("Range") }, [nil, "bytes=150000-", "bytes=150000-"])
        let record = Fixture.accessRecords(a, count: 1, timeout: 5).first { $0["target"] as? String == "/again" }
        XCTAssertEqual(record?["resumed"] as? Int, 1, "one resumed response continued the body")
    }
}
