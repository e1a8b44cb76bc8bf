import AirlockTesting
import Foundation
import XCTest

/// Mutated requests (bounded, deterministic) never crash Airlock, never reach the origin
/// malformed, and leave it serving normal requests.
final class HostileInputTests: XCTestCase {
    /// A small deterministic generator (xorshift), so a failure can be replayed.
    struct Rng {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    /// What the bytes a hostile client sent (then half-closed) hold, judged by RFC 9112 framing alone, one
    /// request after another: how many whole requests come first, and how the bytes end.
    struct Judgement: CustomStringConvertible {
        enum Ending: String {
            case nothingMore      // only the whole requests (and perhaps CR/LF): no answer is owed beyond theirs
            case incomplete       // a head or body cut short by the client's close: closing is allowed
            case invalid          // a whole head whose framing is wrong, or a chunked body that breaks the grammar
        }
        var wholeRequests: Int
        var ending: Ending
        /// Requests that must be answered: every whole one, and an invalid one.
        var owed: Int { wholeRequests + (ending == .invalid ? 1 : 0) }
        var description: String { "\(wholeRequests) whole request(s), then \(ending.rawValue)" }
    }

    static func judge(_ bytes: [UInt8]) -> Judgement {
        var rest = bytes[...]
        var whole = 0
        for _ in 0..<16 {
            while let b = rest.first, b == 13 || b == 10 { rest = rest.dropFirst() }
            if rest.isEmpty { return Judgement(wholeRequests: whole, ending: .nothingMore) }
            guard let end = find([13, 10, 13, 10], in: rest) else { return Judgement(wholeRequests: whole, ending: .incomplete) }
            let head = rest[rest.startIndex..<end]
            var body = rest[(end + 4)...]
            var lengths: [[UInt8]] = []
            var codings: [[UInt8]] = []
            for line in split(head, on: [13, 10]).dropFirst() {
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
                let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
                let value = Array(line[(colon + 1)...]).trimmedOWS
                if name == "content-length" { lengths.append(value) }
                if name == "transfer-encoding" { codings.append(value) }
            }
            if !codings.isEmpty {
                guard lengths.isEmpty, codings.count == 1, String(decoding: codings[0], as: UTF8.self).lowercased() == "chunked" else {
                    return Judgement(wholeRequests: whole, ending: .invalid)
                }
                switch chunkedLength(body) {
                case .whole(let n): body = body.dropFirst(n)
                case .incomplete: return Judgement(wholeRequests: whole, ending: .incomplete)
                case .invalid: return Judgement(wholeRequests: whole, ending: .invalid)
                }
            } else if !lengths.isEmpty {
                guard lengths.count == 1, let n = Int(String(decoding: lengths[0], as: UTF8.self)),
                      lengths[0].allSatisfy({ (48...57).contains($0) }) else {
                    return Judgement(wholeRequests: whole, ending: .invalid)
                }
                guard body.count >= n else { return Judgement(wholeRequests: whole, ending: .incomplete) }
                body = body.dropFirst(n)
            }
            whole += 1
            rest = body
        }
        return Judgement(wholeRequests: whole, ending: .nothingMore)
    }

    enum ChunkedOutcome { case whole(Int), incomplete, invalid }

    /// A chunked body by RFC 9112 §7.1: chunk-size (hex) [extensions] CRLF data CRLF ..., last-chunk,
    /// trailer fields, CRLF. Lines end in CRLF only.
    static func chunkedLength(_ body: ArraySlice<UInt8>) -> ChunkedOutcome {
        var i = body.startIndex
        func line() -> ArraySlice<UInt8>?? {   // nil: incomplete; .some(nil): bare CR/LF
            guard let lf = body[i...].firstIndex(of: 10) else {
                return body[i...].contains(13) && body[i...].last != 13 ? .some(nil) : nil
            }
            guard lf > i, body[lf - 1] == 13, !body[i..<(lf - 1)].contains(13) else { return .some(nil) }
            defer { i = lf + 1 }
            return .some(body[i..<(lf - 1)])
        }
        for _ in 0..<64 {
            guard let next = line() else { return .incomplete }
            guard let sizeLine = next else { return .invalid }
            let digits = sizeLine.prefix { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
            guard !digits.isEmpty, digits.count <= 8, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                return .invalid
            }
            if let after = sizeLine.dropFirst(digits.count).first, after != UInt8(ascii: ";") { return .invalid }
            if size == 0 {
                for _ in 0..<64 {   // trailer section, then the empty line
                    guard let t = line() else { return .incomplete }
                    guard let trailer = t else { return .invalid }
                    if trailer.isEmpty { return .whole(i - body.startIndex) }
                    // A trailer field is a field line: token ":" value.
                    guard let colon = trailer.firstIndex(of: UInt8(ascii: ":")), colon > trailer.startIndex,
                          trailer[..<colon].allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }) else {
                        return .invalid
                    }
                }
                return .invalid
            }
            guard body.endIndex - i >= size + 2 else { return .incomplete }
            i += size
            guard body[i] == 13, body[i + 1] == 10 else { return .invalid }
            i += 2
        }
        return .invalid
    }

    static func find(_ needle: [UInt8], in hay: ArraySlice<UInt8>) -> Int? {
        guard hay.count >= needle.count else { return nil }
        var i = hay.startIndex
        while i <= hay.endIndex - needle.count {
            if hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    static func split(_ hay: ArraySlice<UInt8>, on separator: [UInt8]) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        var rest = hay
        while let at = find(separator, in: rest) {
            parts.append(rest[rest.startIndex..<at])
            rest = rest[(at + separator.count)...]
        }
        return parts + [rest]
    }

    /// Hostile requests, each on its own connection, written whole and then half-closed. Every one gets
    /// an answer for each request RFC 9112 framing says it holds (a whole one, or one whose framing is
    /// invalid), or a close that the judgement names (the client cut a head or body short); never silence
    /// for a whole request, never a hang. Each request is tagged with its own path, the origin echoes the
    /// target, and the origin's count is checked after every case: an Airlock answer (4xx/5xx JSON) means
    /// nothing reached the origin; a 200 is the origin's answer to exactly that request. What reached the
    /// origin must be well formed by RFC 9112 (`RFC9112.requestHeadViolations`).
    func testMutatedRequestsNeverCrashOrLeak() throws {
        let origin = try TestOrigin(.respond { req in .ok("ok \(req.target) \(req.body.count)") })
        defer { origin.stop() }
        let airlock = try AirlockProcess(executable: AirlockProcess.builtExecutable(),
                                         configYAML: Fixture.gatewayConfig(upstreamPort: origin.port,
                                                                           limits: ["header_timeout": "1s"]))
        defer { airlock.stop() }
        let seeds: [(String) -> String] = [
            { "GET /\($0)/a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n" },
            { "POST /\($0)/p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" },
            { "POST /\($0)/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: v\r\n\r\n" },
        ]
        let interesting: [UInt8] = [0, 9, 10, 13, 32, 43, 44, 45, 48, 58, 59, 0x7F, 0xFF, 0x78, 0x41]
        let seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        var rng = Rng(state: seed)
        var outcomes: [String: Int] = [:]
        var originAnswers = 0
        var failures = 0
        for index in 0..<300 where failures < 10 {
            let tag = "t\(index)"
            var bytes = Array(seeds[rng.below(seeds.count)](tag).utf8)
            for _ in 0..<(1 + rng.below(4)) {
                let i = rng.below(bytes.count)
                switch rng.below(4) {
                case 0: bytes[i] = interesting[rng.below(interesting.count)]
                case 1: bytes.insert(interesting[rng.below(interesting.count)], at: i)
                case 2: if bytes.count > 1 { bytes.remove(at: i) }
                default: bytes.insert(contentsOf: bytes[i..<min(bytes.count, i + 1 + rng.below(8))], at: i)
                }
            }
            let judgement = Self.judge(bytes)
            let what = "seed \(String(seed, radix: 16)) case \(index) (\(tag)), \(judgement): \(String(decoding: bytes, as: UTF8.self).debugDescription)"
            let before = origin.requests.count
            let c = try RawClient(port: airlock.port)
            defer { c.close() }
            try? c.send(bytes)
            c.shutdownWrite()
            // Read answers until Airlock closes: each a whole response, then an orderly close or a reset.
            var answers: [RawResponse] = []
            var ending = "hang"
            for _ in 0...(judgement.owed + 1) {
                do {
                    answers.append(try c.readResponse(timeout: 5))
                } catch let error as AirlockTestingError where error.kind == .closed && !error.message.contains("received so far") {
                    ending = "close"
                    break
                } catch {
                    ending = "broken answer: \(error)"
                    break
                }
            }
            let statuses = answers.map(\.status)
            outcomes[(statuses.isEmpty ? "none" : statuses.map(String.init).joined(separator: ",")) + "+" + ending, default: 0] += 1
            var ok = true
            func check(_ condition: Bool, _ message: String) {
                if !condition { ok = false; XCTFail("\(message) — \(what)") }
            }
            check(ending == "close", "the connection did not end in a close after the answers (\(ending)); answers \(statuses)")
            check(answers.count <= judgement.owed + 1, "more answers than requests: \(statuses)")
            if answers.count < judgement.owed {
                // Fewer answers than owed only when Airlock ended the connection deliberately: its last
                // answer is its own error, saying Connection: close.
                if let last = answers.last {
                    check(last.status >= 400 && (last.header("Connection") ?? "").lowercased().contains("close"),
                          "\(answers.count) of \(judgement.owed) owed answers, and the last is no deliberate close: \(statuses)")
                } else {
                    check(false, "no answer at all, only a close, for \(judgement.owed) owed")
                }
            }
            // Tie each answer to the origin: a 200 is the origin's echo of one request, an error is Airlock's own
            // answer (JSON with an error code) and means that request never reached the origin.
            var echoed: [String] = []
            for r in answers {
                let body = String(decoding: r.body, as: UTF8.self)
                if r.status == 200 {
                    check(body.hasPrefix("ok /"), "a 200 that is not the origin's echo: \(body)")
                    echoed.append(String(body.dropFirst(3).prefix { $0 != " " }))
                } else {
                    check(r.status >= 400, "unexpected status \(r.status)")
                    check(Fixture.json(r.body)["error"] is String, "a \(r.status) without Airlock's JSON error: \(body)")
                }
            }
            originAnswers += echoed.count
            let reached = origin.requests.dropFirst(before).map(\.target)
            check(reached == echoed, "the origin received \(reached), the client got the origin's answers for \(echoed)")
            for target in reached {
                // The tag may itself be mutated; what reached the origin must still be a target this case sent.
                check(Self.find(Array(target.utf8), in: bytes[...]) != nil, "the origin received a target this case never sent: \(target)")
            }
            if !ok { failures += 1 }
        }
        // The mutations must exercise both sides: refusals and requests that pass.
        let refusals = outcomes.filter { $0.key.hasPrefix("400") }.values.reduce(0, +)
        XCTAssertGreaterThan(refusals, 30, "\(outcomes)")
        XCTAssertGreaterThan(originAnswers, 30, "\(outcomes)")
        XCTAssertEqual(origin.requests.count, originAnswers, "every request the origin saw was answered to the client")
        // Every request that reached the origin was well formed, by the origin's reader and by RFC 9112.
        XCTAssertTrue(origin.protocolErrors.isEmpty, "malformed bytes reached the origin: \(origin.protocolErrors)")
        for request in origin.requests {
            let violations = RFC9112.requestHeadViolations(request.rawHeadBytes)
            XCTAssertTrue(violations.isEmpty, "\(violations) in \(request.rawHead.debugDescription)")
        }
        // Still alive and serving.
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        try c.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertNil(airlock.waitForExit(timeout: 0.1), "airlock exited during the hostile run")
    }

    /// A gateway whose only route is for host `api.test`: requests for any other host are
    /// refused at once (403), without an upstream.
    private func refusingGateway() throws -> AirlockProcess {
        try AirlockProcess(executable: AirlockProcess.builtExecutable(), configYAML: """
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: api
                match: { host: api.test }
                upstream: http://127.0.0.1:9
            """)
    }

    private static let refusedRequest = "GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n"

    /// Thousands of pipelined requests that are each refused at once are answered one by
    /// one, in a loop: they once recursed (answer, read the next head, answer...) until the
    /// worker's stack overflowed and the process died.
    func testLongPipelineOfRefusedRequestsIsAnsweredInFull() throws {
        let airlock = try refusingGateway()
        defer { airlock.stop() }
        let count = 3_000
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        try c.send(String(repeating: Self.refusedRequest, count: count), timeout: 20)
        c.shutdownWrite()
        let reply = try c.readUntilClose(timeout: 30)
        let text = String(decoding: reply, as: UTF8.self)
        XCTAssertEqual(text.components(separatedBy: "HTTP/1.1 403 ").count - 1, count)
        XCTAssertEqual(text.components(separatedBy: "HTTP/1.1 ").count - 1, count, "nothing but the 403s")
        XCTAssertNil(airlock.waitForExit(timeout: 0.1), "airlock exited")
    }

    /// A client that pipelines requests and never reads the responses: Airlock stops
    /// taking requests once its queued output passes the high watermark, so the client's
    /// sends block and Airlock's memory does not grow with what it sent.
    func testPipelinerThatNeverReadsIsNotBufferedWithoutBound() throws {
        let airlock = try refusingGateway()
        defer { airlock.stop() }
        let before = try airlock.readResidentMemoryKiB()
        let c = try RawClient(port: airlock.port, receiveBufferSize: 4096)
        // 6 MB of requests, ~45 MB of 403 responses if they were all taken. Unbounded, even a
        // debug build answers far more than the 16 MiB below would allow within the 8 s.
        let flood = Array(String(repeating: Self.refusedRequest, count: 6_000_000 / Self.refusedRequest.utf8.count).utf8)
        XCTAssertThrowsError(try c.send(flood, timeout: 8), "every request was taken although no response was read")
        sleep(1)   // what was taken is answered (or queued) by now
        let after = try airlock.readResidentMemoryKiB()
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
        c.close()
        // Still serving.
        let d = try RawClient(port: airlock.port)
        defer { d.close() }
        let r = try d.exchange(Self.refusedRequest)
        XCTAssertEqual(r.status, 403)
        XCTAssertNil(airlock.waitForExit(timeout: 0.1), "airlock exited")
    }

    /// CPU time (user + system) of `pid` in clock ticks, from /proc/PID/stat.
    private static func cpuTicks(_ pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // Fields after the command: state is 0, utime 11, stime 12.
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    /// Out of descriptors: accept fails with EMFILE while the listening socket stays
    /// readable. Airlock pauses accepting and retries instead of spinning (it once burnt a
    /// core and wrote ~700,000 libevent warnings a second), logs that at most once a second,
    /// says at start that the limit is too low for `limits.max_connections`, and serves
    /// again once descriptors are free. Since the client cap follows the descriptor limit,
    /// Airlock's own clients cannot exhaust it: the test takes the descriptors away from
    /// the running process (its soft limit lowered to what it has open, with prlimit).
    func testDescriptorExhaustionPausesAcceptingInsteadOfSpinning() throws {
        let origin = try TestOrigin(.respond { _ in .ok("ok") })
        defer { origin.stop() }
        let directory = NSTemporaryDirectory() + "airlock-nofile-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let airlock = try Fixture.startWithDescriptorLimit(64, yaml: Fixture.gatewayConfig(upstreamPort: origin.port, workers: 1),
                                                           directory: directory)
        defer { airlock.stop() }
        let warning = airlock.waitForLog(timeout: 2) { $0["event"] as? String == "airlock.fd-limit" }
        XCTAssertEqual(warning?["key"] as? String, "limits.max_connections", "\(String(describing: warning))")
        // The soft limit becomes the lowest free descriptor number: every accept fails.
        try Fixture.exhaustDescriptors(of: airlock.pid, hard: 64)
        // More connections than descriptors: the kernel completes them, Airlock cannot take them.
        var clients: [RawClient] = []
        for _ in 0..<100 { clients.append(try RawClient(port: airlock.port)) }
        XCTAssertNotNil(airlock.waitForLog(timeout: 5) { $0["event"] as? String == "listener.paused" })
        let before = Self.cpuTicks(airlock.pid)
        sleep(2)
        let used = Self.cpuTicks(airlock.pid) - before
        XCTAssertLessThan(used, Int(sysconf(Int32(_SC_CLK_TCK))) / 2, "Airlock used \(used) ticks in 2 s at its descriptor limit")
        let pausedRecords = airlock.logRecords().filter { $0["event"] as? String == "listener.paused" }
        XCTAssertLessThanOrEqual(pausedRecords.count, 5, "at most one record a second")
        XCTAssertGreaterThan(pausedRecords.compactMap { $0["failures"] as? Int }.reduce(0, +), 1,
                             "the records count the failed accepts they stand for")
        for c in clients { c.close() }
        clients = []
        try Fixture.restoreDescriptorLimit(of: airlock.pid, to: 64)
        // Descriptors free again: a new client is served (within a few retry delays).
        var status = 0
        for _ in 0..<20 where status != 200 {
            if let c = try? RawClient(port: airlock.port), let r = try? c.exchange("GET / HTTP/1.1\r\nHost: a\r\n\r\n") {
                status = r.status
                c.close()
            } else {
                usleep(200_000)
            }
        }
        XCTAssertEqual(status, 200)
        XCTAssertNil(airlock.waitForExit(timeout: 0.1), "airlock exited")
    }
}

private extension Array where Element == UInt8 {
    /// Without leading and trailing spaces and tabs (OWS).
    var trimmedOWS: [UInt8] {
        var s = self[...]
        while let f = s.first, f == 32 || f == 9 { s = s.dropFirst() }
        while let l = s.last, l == 32 || l == 9 { s = s.dropLast() }
        return Array(s)
    }
}
