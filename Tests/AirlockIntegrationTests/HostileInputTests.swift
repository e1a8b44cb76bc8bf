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

    func testMutatedRequestsNeverCrashOrLeak() throws {
        let origin = try TestOrigin(.respond { req in .ok("ok \(req.body.count)") })
        defer { origin.stop() }
        let airlock = try AirlockProcess(executable: AirlockProcess.builtExecutable(),
                                         configYAML: Fixture.gatewayConfig(upstreamPort: origin.port,
                                                                           limits: ["header_timeout": "1s"]))
        defer { airlock.stop() }
        let seeds: [[UInt8]] = [
            Array("GET /a?b=c HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n".utf8),
            Array("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".utf8),
            Array("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: v\r\n\r\n".utf8),
        ]
        let interesting: [UInt8] = [0, 9, 10, 13, 32, 43, 44, 45, 48, 58, 59, 0x7F, 0xFF, 0x78, 0x41]
        var rng = Rng(state: 0x9E37_79B9_7F4A_7C15)
        var statuses: [String: Int] = [:]
        for _ in 0..<300 {
            var bytes = seeds[rng.below(seeds.count)]
            for _ in 0..<(1 + rng.below(4)) {
                let i = rng.below(bytes.count)
                switch rng.below(4) {
                case 0: bytes[i] = interesting[rng.below(interesting.count)]
                case 1: bytes.insert(interesting[rng.below(interesting.count)], at: i)
                case 2: if bytes.count > 1 { bytes.remove(at: i) }
                default: bytes.insert(contentsOf: bytes[i..<min(bytes.count, i + 1 + rng.below(8))], at: i)
                }
            }
            let c = try RawClient(port: airlock.port)
            try? c.send(bytes)
            c.shutdownWrite()
            // Whatever happened, the connection ends (a response, or a close): never a hang.
            let reply = (try? c.readUntilClose(timeout: 5)) ?? []
            let status = reply.count >= 12 ? String(decoding: reply[9..<12], as: UTF8.self) : "none"
            statuses[status, default: 0] += 1
            c.close()
        }
        // The mutations must exercise both sides: refusals and requests that pass.
        XCTAssertGreaterThan(statuses["400", default: 0], 30, "\(statuses)")
        XCTAssertGreaterThan(origin.requests.count, 30, "\(statuses)")
        // Still alive and serving, and every request that reached the origin was well formed.
        let c = try RawClient(port: airlock.port)
        defer { c.close() }
        try c.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = try c.readResponse()
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(origin.protocolErrors.isEmpty, "malformed bytes reached the origin: \(origin.protocolErrors)")
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
        let before = airlock.residentMemoryKiB()
        let c = try RawClient(port: airlock.port, receiveBufferSize: 4096)
        // 6 MB of requests, ~45 MB of 403 responses if they were all taken. Unbounded, even a
        // debug build answers far more than the 16 MiB below would allow within the 8 s.
        let flood = Array(String(repeating: Self.refusedRequest, count: 6_000_000 / Self.refusedRequest.utf8.count).utf8)
        XCTAssertThrowsError(try c.send(flood, timeout: 8), "every request was taken although no response was read")
        sleep(1)   // what was taken is answered (or queued) by now
        let after = airlock.residentMemoryKiB()
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
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wrapper = directory + "/airlock-nofile-64"
        try Data("#!/bin/sh\nulimit -n 64\nexec '\(AirlockProcess.builtExecutable())' \"$@\"\n".utf8)
            .write(to: URL(fileURLWithPath: wrapper))
        XCTAssertEqual(chmod(wrapper, 0o755), 0)
        let airlock = try AirlockProcess(executable: wrapper, configYAML: """
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(origin.port)
            """)
        defer { airlock.stop() }
        let warning = airlock.waitForLog(timeout: 2) { $0["event"] as? String == "airlock.fd-limit" }
        XCTAssertEqual(warning?["key"] as? String, "limits.max_connections", "\(String(describing: warning))")
        // The soft limit becomes the lowest free descriptor number: every accept fails.
        let inUse = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(airlock.pid)/fd").compactMap { Int($0) })
        let lowestFree = (0...).first { !inUse.contains($0) }!
        let lowered = try runProcess("/usr/bin/prlimit", ["--pid", "\(airlock.pid)", "--nofile=\(lowestFree):64"], timeout: 10)
        XCTAssertEqual(lowered.exitCode, 0, lowered.stderr)
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
        let raised = try runProcess("/usr/bin/prlimit", ["--pid", "\(airlock.pid)", "--nofile=64:64"], timeout: 10)
        XCTAssertEqual(raised.exitCode, 0, raised.stderr)
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
