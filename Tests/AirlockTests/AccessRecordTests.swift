import Foundation
import Glibc
import AirlockIO
import AirlockSession
import AirlockWire
import Logging
import XCTest
@testable import Airlock

/// The direct encoding of `request.access` (what a worker writes per request) is byte for
/// byte the line `JSONLogHandler` writes for the same record's metadata (apart from the time).
final class AccessRecordTests: XCTestCase {
    /// The line without its timestamp (`{"time":"2026-11-22T10:00:00.123Z"` is 34 bytes).
    private func untimed(_ line: [UInt8]) -> String {
        XCTAssertEqual(Array(line.prefix(9)), Array("{\"time\":\"".utf8))
        XCTAssertEqual(line[33], UInt8(ascii: "\""))
        return String(decoding: line.dropFirst(34), as: UTF8.self)
    }

    private func direct(_ r: AccessRecord) -> [UInt8] {
        var e = JSONLineEncoder()
        r.encode(into: &e)
        return e.bytes
    }

    private func viaHandler(_ r: AccessRecord) -> [UInt8] {
        JSONLogHandler.encode(level: .info, message: AccessRecord.event.description, metadata: r.metadata)
    }

    func testDirectEncodingMatchesTheHandlerForEveryFieldCombination() {
        var full = AccessRecord(
            requestID: RequestID(prefix: "0f1e2d3c4b5a6978", worker: 12, serial: 0xdead_beef_0042),
            status: 502, bytesIn: 1234, bytesOut: UInt64.max, durationMillis: 12.345,
            client: SocketAddress(ipLiteral: "::1", port: 50123)!,
            request: ("POST", "/a\"b\\c\u{01}\u{7f}\u{2028}é?q=1", "api.test"),
            route: "api \"v2\"", upstream: SocketAddress(ipLiteral: "10.20.30.40", port: 8080), incomplete: true,
            upstreamTiming: (0.5, true))
        var metrics = TaskMetrics(fetchStart: 1_000_000)
        (metrics.dnsStart, metrics.dnsEnd) = (1_000_000, 1_250_000)
        (metrics.connectStart, metrics.connectEnd) = (1_250_000, 2_000_000)
        (metrics.secureStart, metrics.secureEnd) = (1_500_000, 2_000_000)
        metrics.requestSent = 2_100_000
        metrics.firstResponseByte = 9_000_000
        metrics.responseEnd = 1_000_000_000_000
        metrics.reused = true
        full.task = ("failed", metrics)
        full.requestID.client = "client-\"id\"/1"
        full.intercepted = true
        var bare = full
        bare.intercepted = false
        bare.task = nil
        bare.request = nil
        bare.route = nil
        bare.upstream = nil
        bare.incomplete = false
        bare.upstreamTiming = nil
        bare.requestID = RequestID(prefix: "p", worker: 0, serial: 0)
        bare.status = 0
        bare.bytesOut = 0
        bare.durationMillis = 0
        var fresh = full
        fresh.client = SocketAddress(ipLiteral: "192.168.100.254", port: 1)!
        fresh.upstreamTiming = (1e-3, false)
        fresh.incomplete = false
        fresh.durationMillis = 1_000_000.25
        var early = TaskMetrics(fetchStart: 5)   // no upstream used: no "reused", only "total"
        early.responseEnd = 2_000_005
        fresh.task = ("cancelled", early)
        fresh.requestID.client = nil
        // Every field of a fixed size at its longest (AccessRecord's bound: a record whose
        // bound were too small would trap here).
        var longest = full
        longest.status = Int.min
        longest.bytesIn = UInt64.max
        longest.durationMillis = -1.2345678901234567e-300
        longest.client = SocketAddress(ipLiteral: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", port: 65_535)!
        longest.upstream = SocketAddress(ipLiteral: "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", port: 65_535)!
        longest.upstreamTiming = (-.infinity, false)
        longest.requestID = RequestID(prefix: "", worker: Int.min, serial: UInt64.max)
        longest.resumed = Int.max
        longest.tunnel = "closed"
        var slow = TaskMetrics(fetchStart: 1)
        (slow.dnsStart, slow.dnsEnd) = (1, UInt64.max / 7)
        (slow.connectStart, slow.connectEnd) = (3, UInt64.max / 5)
        (slow.secureStart, slow.secureEnd) = (7, UInt64.max / 3)
        slow.requestSent = UInt64.max / 2
        slow.firstResponseByte = UInt64.max - 11
        slow.responseEnd = UInt64.max - 1
        longest.task = ("cancelled", slow)
        for (name, r) in [("full", full), ("bare", bare), ("fresh", fresh), ("longest", longest)] {
            let a = direct(r), b = viaHandler(r)
            XCTAssertEqual(a.last, UInt8(ascii: "\n"), name)
            XCTAssertEqual(untimed(a), untimed(b), name)
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(a.dropLast())), name)
        }
        // The task fields are there, as the handler writes them.
        let line = untimed(direct(full))
        XCTAssertTrue(line.contains(#""reused":true"#), line)
        XCTAssertTrue(line.contains(#""state":"failed""#), line)
        XCTAssertTrue(line.contains(#""incomplete":true,"intercepted":true,"#), line)
        XCTAssertFalse(untimed(direct(bare)).contains("intercepted"))
        XCTAssertTrue(line.contains(#""request_id":"client-\"id\"/1""#), line)
        XCTAssertTrue(line.contains(#""timings":{"connect":0.75,"dns":0.25,"request_sent":1.1,"tls":0.5,"total":999999.0,"ttfb":8.0}"#), line)
        let freshLine = untimed(direct(fresh))
        XCTAssertFalse(freshLine.contains(#","reused":"#), freshLine)
        XCTAssertTrue(freshLine.contains(#""timings":{"total":2.0}"#), freshLine)
    }

    func testIntegersAndHexMatchTheStandardLibrary() {
        for v in [0, 7, 9, 10, 99, 100, 101, 65_535, Int.max, -1, -10, Int.min] {
            var e = JSONLineEncoder(appendingTo: [])
            e.appendInteger(v)
            XCTAssertEqual(String(decoding: e.bytes, as: UTF8.self), String(v))
        }
        for v: UInt64 in [0, 1, 9, 10, 1_000_000_000_000_000_000, UInt64.max] {
            var e = JSONLineEncoder(appendingTo: [])
            e.appendInteger(v)
            XCTAssertEqual(String(decoding: e.bytes, as: UTF8.self), String(v))
        }
        for v: UInt64 in [0, 1, 0xf, 0x10, 0xabc, 0x8000_0000_0000_0000, UInt64.max] {
            XCTAssertEqual(TextBuilder.withBytes(capacity: 16, { $0.append(hex: v) }) { String(decoding: $0, as: UTF8.self) },
                           String(v, radix: 16))
        }
    }

    /// Through a worker's buffer: the record lands in the buffer's bytes as one whole line.
    func testRecordsEncodedIntoABufferAreWholeLines() {
        let lines = LinesBox()
        let sink = JSONLogSink { lines.append($0) }
        let buffer = LogBuffer(sink: sink, reserve: 1 << 20)
        let r = AccessRecord(requestID: RequestID(prefix: "x", worker: 1, serial: 2), status: 200, bytesIn: 1,
                             bytesOut: 2, durationMillis: 0.25, client: SocketAddress(ipLiteral: "127.0.0.1", port: 1)!, request: nil, route: nil,
                             upstream: nil, incomplete: false, upstreamTiming: nil)
        buffer.append { r.encode(into: &$0) }
        buffer.append { r.encode(into: &$0) }
        XCTAssertEqual(buffer.pendingRecords, 2)
        buffer.flush()
        XCTAssertEqual(lines.all.count, 2)
        XCTAssertEqual(lines.all.first.map { untimed(Array(($0 + "\n").utf8)) }, untimed(viaHandler(r)))
    }
}

private final class LinesBox: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []
    var all: [String] { lock.withLock { collected } }
    func append(_ line: String) { lock.withLock { collected.append(line) } }
}

/// The shortcuts (TextBuilder's, which access records use) write what the general paths write.
final class JSONLineEncoderShortcutTests: XCTestCase {
    func testThousandthsMatchDoubleDescription() {
        var values: [Double] = [0, -0.0, 0.001, 0.01, 0.1, 0.25, 1, 5, 12.345, 999.999, 1000, 1_000_000.25,
                                999_999_999.999, 1e9, 1e12, 0.0005, 1e-7, 2.5e-4, -1, -12.345, .infinity, .nan]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let micros = Double(UInt64.random(in: 0...10_000_000_000, using: &rng))
            values.append((micros / 1000).rounded() / 1000)   // as logAccess rounds durations
            values.append(Double(UInt64.random(in: 0...100_000_000, using: &rng)) / 1000 / 1000)
        }
        for v in values {
            let fast = TextBuilder.withBytes(capacity: 40, { $0.append(thousandths: v) }) { String(decoding: $0, as: UTF8.self) }
            var general = JSONLineEncoder(appendingTo: [])
            general.appendValue(.stringConvertible(v))
            XCTAssertEqual(fast, String(decoding: general.bytes, as: UTF8.self), "\(v)")
        }
    }

    /// Strings that need escaping take the byte-by-byte path; the rest are copied whole.
    func testStringShortcutEscapesLikeTheGeneralPath() {
        let cases = ["", "plain /path?q=1", "é ü 日本", "quote\"", "back\\slash", "tab\t", "\u{01}", "del\u{7f}",
                     "ls\u{2028}ps\u{2029}", "\u{2027}e2-but-not-ls", "mixed é \" \u{2028}"]
        let expected = ["", "plain /path?q=1", "é ü 日本", "quote\\\"", "back\\\\slash", "tab\\u0009", "\\u0001",
                        "del\\u007f", "ls\\u2028ps\\u2029", "\u{2027}e2-but-not-ls", "mixed é \\\" \\u2028"]
        for (text, want) in zip(cases, expected) {
            var e = JSONLineEncoder(appendingTo: [])
            e.appendString(text)
            XCTAssertEqual(String(decoding: e.bytes, as: UTF8.self), "\"" + want + "\"", text)
            let built = TextBuilder.withBytes(capacity: TextBuilder.jsonEscapedBound(text) + 2,
                                              { $0.append(jsonQuoted: text, style: .log) }) { String(decoding: $0, as: UTF8.self) }
            XCTAssertEqual(built, "\"" + want + "\"", text)
        }
    }

    /// Timestamps from the per-second cache name the second the clock is in, second after second.
    func testCachedTimestampsFollowTheClock() {
        var e = JSONLineEncoder(appendingTo: [])
        var seconds: Set<String> = []
        for _ in 0..<3 {
            for _ in 0..<5 {
                var before = timespec(), after = timespec()
                clock_gettime(CLOCK_REALTIME, &before)
                e.bytes.removeAll()
                e.appendTimestamp()
                clock_gettime(CLOCK_REALTIME, &after)
                let text = String(decoding: e.bytes, as: UTF8.self)
                XCTAssertNotNil(text.range(of: #"^"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"$"#, options: .regularExpression), text)
                let second = String(text.prefix(20))
                let clock = [before.tv_sec, after.tv_sec].map { s -> String in
                    var fresh = JSONLineEncoder(appendingTo: [])
                    fresh.appendTimestamp(seconds: s, milliseconds: 0)
                    return String(decoding: fresh.bytes.prefix(20), as: UTF8.self)
                }
                XCTAssertTrue(clock.contains(second), "\(second) is not one of \(clock)")
                seconds.insert(second)
            }
            usleep(600_000)
        }
        XCTAssertGreaterThan(seconds.count, 1, "the cached second moves on")
    }
}
