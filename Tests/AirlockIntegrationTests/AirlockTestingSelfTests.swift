import AirlockTesting
import Foundation
import Glibc
import XCTest

/// Self-tests of the AirlockTesting library, against itself: no Airlock involved.
final class AirlockTestingSelfTests: XCTestCase {
    private func echoOrigin() throws -> TestOrigin {
        try TestOrigin(.respond { request in
            .ok("\(request.method) \(request.target) \(request.body.count)")
        })
    }

    // MARK: TestOrigin + Curl

    func testCurlGetReturnsBody() throws {
        let origin = try TestOrigin(.respond { _ in .ok("hello from origin") })
        defer { origin.stop() }
        let result = try Curl.run([origin.url("/hello")], timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stdoutString, "hello from origin")
        XCTAssertTrue(origin.waitForRequests(1, timeout: 5))
        let request = try XCTUnwrap(origin.requests.first)
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.target, "/hello")
        XCTAssertEqual(request.version, "HTTP/1.1")
        XCTAssertEqual(request.header("host"), "127.0.0.1:\(origin.port)")
        XCTAssertEqual(request.connectionIndex, 0)
        XCTAssertTrue(request.rawHead.hasPrefix("GET /hello HTTP/1.1\r\n"))
        XCTAssertTrue(request.rawHead.hasSuffix("\r\n\r\n"))
    }

    func testKeepAliveReusesOneConnection() throws {
        let origin = try echoOrigin()
        defer { origin.stop() }
        let result = try Curl.run([origin.url("/a"), origin.url("/b")], timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stdoutString, "GET /a 0GET /b 0")
        XCTAssertEqual(origin.acceptedConnections, 1)
        XCTAssertEqual(origin.requests.map(\.connectionIndex), [0, 0])
    }

    func testChunkedPostBodyIsDecoded() throws {
        let origin = try echoOrigin()
        defer { origin.stop() }
        let result = try Curl.run([
            "-H", "Transfer-Encoding: chunked", "--data-binary", "chunked payload", origin.url("/upload"),
        ], timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stdoutString, "POST /upload 15")
        let request = try XCTUnwrap(origin.requests.first)
        XCTAssertTrue(request.wasChunked)
        XCTAssertEqual(request.bodyString, "chunked payload")
    }

    func testLargePostWithExpectContinue() throws {
        let origin = try TestOrigin(.respond { request in
            .ok("\(request.body.count) \(request.body == patternBytes(count: request.body.count))")
        })
        defer { origin.stop() }
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let upload = directory + "/upload"
        try Data(patternBytes(count: 2 << 20)).write(to: URL(fileURLWithPath: upload))
        let started = Date()
        let result = try Curl.run(["-H", "Expect: 100-continue", "--data-binary", "@" + upload, origin.url("/up")],
                                  timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stdoutString, "\(2 << 20) true")
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.9, "100 Continue spares curl its 1 s expect wait")
        XCTAssertEqual(origin.requests.first?.header("expect"), "100-continue")
    }

    func testSlowReaderTakesOnlyWhatItAsksFor() throws {
        let size = 1 << 20
        let origin = try TestOrigin(.respond { _ in TestResponse(body: .pattern(count: size)) })
        defer { origin.stop() }
        let client = try RawClient(port: origin.port, receiveBufferSize: 4096)
        defer { client.close() }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        var received: [UInt8] = []
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n".utf8)
        while received.count < head.count + size {
            let piece = try client.read(upTo: 1000, timeout: 5)
            XCTAssertFalse(piece.isEmpty)
            XCTAssertLessThanOrEqual(piece.count, 1000)
            received += piece
        }
        XCTAssertEqual(Array(received.prefix(head.count)), head)
        XCTAssertTrue(Array(received.dropFirst(head.count)) == patternBytes(count: size))
    }

    func testChunkedResponseAndHeadHaveNoBody() throws {
        let origin = try TestOrigin(.respond { _ in
            TestResponse(body: .bytes(Array("chunky".utf8)), chunked: true)
        })
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        defer { client.close() }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        let get = try client.readResponse(timeout: 5)
        XCTAssertTrue(get.wasChunked)
        XCTAssertEqual(get.bodyString, "chunky")
        XCTAssertEqual(String(decoding: get.raw, as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nchunky\r\n0\r\n\r\n")
        let head = try client.readResponse(timeout: 5, requestMethod: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, [])
        XCTAssertEqual(head.header("transfer-encoding"), "chunked")
    }

    func testPatternBodyMatchesPatternBytes() throws {
        let size = 5 << 20
        let origin = try TestOrigin(.respond { _ in TestResponse(body: .pattern(count: size)) })
        defer { origin.stop() }
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/download"
        let result = try Curl.run(["-o", file, origin.url("/big")], timeout: 30)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        let expected = patternBytes(count: size)
        XCTAssertEqual(try sha256Hex(file: file), try sha256Hex(expected))
        // The pattern is position-dependent: the 64 KiB blocks it is written in are not all alike.
        XCTAssertEqual(patternBytes(count: 10, offset: 65_536), Array(expected[65_536..<65_546]))
        XCTAssertNotEqual(Array(expected[0..<65_536]), Array(expected[65_536..<131_072]))
    }

    func testFileBodyIsStreamed() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = directory + "/source"
        let bytes = patternBytes(count: 200_000, offset: 7)
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        let origin = try TestOrigin(.respond { _ in TestResponse(body: .file(source), chunked: true) })
        defer { origin.stop() }
        let result = try Curl.run([origin.url("/file")], timeout: 10)
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stdout, bytes)
    }

    func testSilentOriginMakesCurlTimeOut() throws {
        let origin = try TestOrigin(.silent)
        defer { origin.stop() }
        let started = Date()
        let result = try Curl.run([origin.url("/never")], timeout: 1)
        XCTAssertEqual(result.exitCode, 28, "curl should time out; stderr: \(result.stderr)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertTrue(origin.waitForRequests(1, timeout: 2), "silent origins still record requests")
    }

    func testCloseImmediatelyGivesEmptyReply() throws {
        let origin = try TestOrigin(.closeImmediately)
        defer { origin.stop() }
        let result = try Curl.run([origin.url("/")], timeout: 10)
        XCTAssertNotEqual(result.exitCode, 0)
        XCTAssertTrue(origin.waitForConnections(1, timeout: 5))
        XCTAssertEqual(origin.requests.count, 0)
    }

    func testRawBehaviorWritesExactBytesAndCloses() throws {
        let origin = try TestOrigin(.raw { _ in Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".utf8) })
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        defer { client.close() }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(String(decoding: try client.readUntilClose(timeout: 5), as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
    }

    // MARK: RawClient

    func testRawClientPipelinedRequestsGetResponsesInOrder() throws {
        let origin = try echoOrigin()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        defer { client.close() }
        try client.send(
            "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
        let first = try client.readResponse(timeout: 5)
        let second = try client.readResponse(timeout: 5)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.bodyString, "GET /first 0")
        XCTAssertEqual(second.bodyString, "POST /second 3")
        XCTAssertEqual(second.header("content-length"), "14")
        XCTAssertEqual(origin.acceptedConnections, 1)
        XCTAssertEqual(origin.requests.map(\.target), ["/first", "/second"])
    }

    func testRawClientSeesCloseAfterConnectionClose() throws {
        let origin = try echoOrigin()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        defer { client.close() }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = try client.readResponse(timeout: 5)
        XCTAssertEqual(response.header("connection"), "close")
        XCTAssertTrue(client.isClosedByPeer(timeout: 5))
    }

    func testRawClientReadTimesOut() throws {
        let origin = try TestOrigin(.silent)
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        defer { client.close() }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertThrowsError(try client.readResponse(timeout: 0.3)) { error in
            XCTAssertEqual((error as? AirlockTestingError)?.kind, .timeout)
        }
        XCTAssertFalse(client.isClosedByPeer(timeout: 0.2))
    }

    func testMalformedRequestGets400() throws {
        let origin = try echoOrigin()
        defer { origin.stop() }
        let client = try RawClient(port: origin.port)
        defer { client.close() }
        try client.send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n")
        XCTAssertEqual(try client.readResponse(timeout: 5).status, 400)
        XCTAssertEqual(origin.protocolErrors.count, 1)
    }

    func testUnusedLoopbackPortRefusesConnections() throws {
        let port = unusedLoopbackPort()
        XCTAssertGreaterThan(port, 0)
        XCTAssertThrowsError(try RawClient(port: port)) { error in
            XCTAssertEqual((error as? AirlockTestingError)?.kind, .system(errno: ECONNREFUSED))
        }
        let result = try Curl.run(["http://127.0.0.1:\(port)/"], timeout: 5)
        XCTAssertEqual(result.exitCode, 7, result.stderr)
    }

    /// The ports handed out lie below the kernel's ephemeral range (no outgoing connection can
    /// be given one as its local port before the test binds it), differ from call to call, and
    /// can be listened on.
    func testUnusedLoopbackPortsLieBelowTheEphemeralRangeAndDiffer() throws {
        let low = try XCTUnwrap(kernelSetting("net/ipv4/ip_local_port_range")?.first)
        let ports = (0..<50).map { _ in unusedLoopbackPort() }
        XCTAssertEqual(Set(ports).count, 50, "\(ports)")
        for port in ports { XCTAssertLessThan(Int(port), low, "\(port) is in the ephemeral range from \(low)") }
        let origin = try TestOrigin(.respond { _ in .ok("here") }, port: ports[0])
        defer { origin.stop() }
        XCTAssertEqual(origin.port, ports[0])
        XCTAssertEqual(try RawClient(port: ports[0]).exchange("GET / HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
    }

    func testStopClosesEverythingAndIsIdempotent() throws {
        let origin = try TestOrigin(.silent)
        let port = origin.port
        let client = try RawClient(port: port)
        defer { client.close() }
        XCTAssertTrue(origin.waitForConnections(1, timeout: 5))
        let started = Date()
        origin.stop()
        origin.stop()
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertTrue(client.isClosedByPeer(timeout: 5))
        XCTAssertThrowsError(try RawClient(port: port))
    }

    func testStopReleasesEveryDescriptorAndThread() throws {
        func exercise() throws {
            let origin = try echoOrigin()
            let silent = try TestOrigin(.silent)
            let client = try RawClient(port: origin.port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try client.readResponse(timeout: 5)
            let idle = try RawClient(port: silent.port)
            XCTAssertEqual(try Curl.run([origin.url("/a"), origin.url("/b")], timeout: 10).exitCode, 0)
            XCTAssertTrue(silent.waitForConnections(1, timeout: 5))
            origin.stop()
            silent.stop()
            client.close()
            idle.close()
        }
        func counts() -> (descriptors: Int, threads: Int) {
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let threads = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
                .flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? -1
            return (descriptors, threads)
        }
        try exercise()  // warm up whatever Foundation and XCTest create lazily
        let before = counts()
        try exercise()
        let deadline = Date(timeIntervalSinceNow: 3)
        var after = counts()
        while (after.descriptors != before.descriptors || after.threads > before.threads), Date() < deadline {
            usleep(20_000)
            after = counts()
        }
        XCTAssertEqual(after.descriptors, before.descriptors, "descriptors leaked")
        XCTAssertLessThanOrEqual(after.threads, before.threads, "threads leaked")
    }

    // MARK: Checksums

    func testSha256OfKnownBytes() throws {
        XCTAssertEqual(try sha256Hex(Array("abc".utf8)),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    // MARK: AirlockProcess (against a stand-in script: there is no airlock binary yet)

    private func standIn(_ body: String) throws -> (script: String, directory: String) {
        let directory = try makeTemporaryDirectory()
        let script = directory + "/fake-airlock"
        try Data("#!/bin/sh\n\(body)\n".utf8).write(to: URL(fileURLWithPath: script))
        XCTAssertEqual(chmod(script, 0o755), 0)
        return (script, directory)
    }

    func testAirlockProcessParsesListeningPortAndStops() throws {
        let (script, directory) = try standIn("""
            echo 'starting, not json'
            echo "{\\"event\\":\\"airlock.config\\",\\"args\\":\\"$*\\",\\"config\\":\\"$(cat "$3")\\"}"
            echo '{"event":"airlock.listening","port":4242}'
            exec sleep 60
            """)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = try AirlockProcess(executable: script, configYAML: "listen: here", extraArgs: ["--verbose"])
        XCTAssertEqual(process.port, 4242)
        XCTAssertGreaterThan(process.pid, 0)
        XCTAssertEqual(process.logLines.first, "starting, not json")
        let records = process.logRecords()
        XCTAssertEqual(records.count, 2)
        XCTAssertEqual(records.last?["event"] as? String, "airlock.listening")
        let config = try XCTUnwrap(process.waitForLog(timeout: 1) { $0["event"] as? String == "airlock.config" })
        XCTAssertEqual(config["args"] as? String, "run --config \(process.configPath) --verbose")
        XCTAssertEqual(config["config"] as? String, "listen: here")
        XCTAssertNil(process.waitForLog(timeout: 0.2) { $0["event"] as? String == "never" })
        XCTAssertGreaterThan(try process.readResidentMemoryKiB(), 0)

        let started = Date()
        process.stop()
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "sleep dies on SIGTERM")
        XCTAssertEqual(process.waitForExit(timeout: 1), 128 + SIGTERM)
        XCTAssertEqual(kill(process.pid, 0), -1, "the child is gone and reaped")
        XCTAssertThrowsError(try process.readResidentMemoryKiB(), "a process that is gone has no memory to read, not 0") {
            XCTAssertEqual(($0 as? AirlockTestingError)?.kind, .process, "\($0)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: process.configPath))
        process.stop()
    }

    /// A process that died under the test (SIGKILL, as a crash would) has no memory to read:
    /// `residentMemoryKiB` throws instead of answering 0, so "memory stayed flat" cannot pass
    /// because Airlock is gone.
    func testResidentMemoryOfAProcessThatDiedThrows() throws {
        let (script, directory) = try standIn("""
            echo '{"event":"airlock.listening","port":4242}'
            exec sleep 60
            """)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = try AirlockProcess(executable: script, configYAML: "x")
        defer { process.stop() }
        XCTAssertGreaterThan(try process.readResidentMemoryKiB(), 0, "alive: a positive reading")
        XCTAssertEqual(process.residentMemoryKiB() > 0, true, "the non-throwing reading of a live process")
        XCTAssertEqual(kill(process.pid, SIGKILL), 0)
        func isZombie() -> Bool {
            let stat = (try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8)) ?? ""
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        }
        let deadline = Date().addingTimeInterval(5)
        while !isZombie() && Date() < deadline { usleep(10_000) }
        XCTAssertTrue(isZombie(), "killed, not yet reaped")
        XCTAssertThrowsError(try process.readResidentMemoryKiB(), "a dead process has no memory to read, not 0") {
            XCTAssertEqual(($0 as? AirlockTestingError)?.kind, .process, "\($0)")
        }
    }

    func testAirlockProcessThatExitsEarlyThrowsWithStderr() throws {
        let (script, directory) = try standIn("echo 'bad config: nope' >&2; exit 3")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertThrowsError(try AirlockProcess(executable: script, configYAML: "x", startTimeout: 5)) { error in
            let error = error as? AirlockTestingError
            XCTAssertEqual(error?.kind, .process)
            XCTAssertTrue(error?.message.contains("bad config: nope") ?? false, "\(String(describing: error))")
            XCTAssertTrue(error?.message.contains("status 3") ?? false, "\(String(describing: error))")
        }
    }

    func testAirlockProcessStartTimeout() throws {
        let (script, directory) = try standIn("echo '{\"event\":\"airlock.starting\"}'; exec sleep 60")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        XCTAssertThrowsError(try AirlockProcess(executable: script, configYAML: "x", startTimeout: 0.5)) { error in
            XCTAssertEqual((error as? AirlockTestingError)?.kind, .timeout)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    /// The lookup returns its last candidate even when nothing exists there, so a suffix check could not fail:
    /// the path must be an executable that answers `--version` as airlock.
    func testBuiltExecutableIsTheBuiltAirlock() throws {
        let path = AirlockProcess.builtExecutable()
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: path), "no executable at \(path)")
        let r = try runProcess(path, ["--version"], timeout: 20)
        XCTAssertEqual(r.exitCode, 0, "\(path) --version: \(r.stderr)")
        XCTAssertTrue(r.stdoutString.hasPrefix("airlock "), "\(path) --version printed \(r.stdoutString.debugDescription)")
    }

    /// The RFC 9112 judge of what reached an origin: silent on a well-formed head, and names each break.
    func testRFC9112RequestHeadViolations() {
        func violations(_ head: String) -> [String] { RFC9112.requestHeadViolations(Array(head.utf8)) }
        XCTAssertEqual(violations("GET /a?b=c HTTP/1.1\r\nHost: x\r\nX-A:  v \t\r\nContent-Length: 5\r\n\r\n"), [])
        XCTAssertEqual(violations("POST / HTTP/1.1\r\nhost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), [])
        let bad: [(String, String)] = [
            ("GET / HTTP/1.1\r\nHost: x\r\n", "does not end with CRLF CRLF"),
            ("GET / HTTP/1.1\nHost: x\r\n\r\n", "bare LF"),
            ("GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", "bare CR"),
            ("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", "request line"),
            ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", "method"),
            ("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", "origin-form"),
            ("GET /\u{7F} HTTP/1.1\r\nHost: x\r\n\r\n", "outside VCHAR"),
            ("GET / HTTP/1.0\r\nHost: x\r\n\r\n", "HTTP/1.1"),
            ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", "obs-fold"),
            ("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", "without a colon"),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", "not a token"),
            ("GET / HTTP/1.1\r\nHost: x\r\nA: b\u{0}c\r\n\r\n", "control byte"),
            ("GET / HTTP/1.1\r\nA: b\r\n\r\n", "0 Host fields"),
            ("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", "2 Host fields"),
            ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", "1*DIGIT"),
            ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", "2 Content-Length"),
            ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "both"),
            ("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "does not end in chunked"),
        ]
        for (head, expected) in bad {
            let found = violations(head)
            XCTAssertTrue(found.contains { $0.contains(expected) }, "\(head.debugDescription): \(found), expected \(expected)")
        }
    }
}
