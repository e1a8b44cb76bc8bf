import AirlockConfig
import AirlockIO
import Foundation
import Logging
import XCTest
@testable import Airlock

/// Collects lines from a closure sink, from any thread.
private final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []

    var lines: [String] { lock.withLock { collected } }

    func append(_ line: String) { lock.withLock { collected.append(line) } }

    func logger(level: Logger.Level = .trace, provider: Logger.MetadataProvider? = nil) -> Logger {
        Logger(label: "test") { [self] label in
            JSONLogHandler(label: label, level: level, metadataProvider: provider) { self.append($0) }
        }
    }
}

final class JSONLogHandlerTests: XCTestCase {
    private func object(_ line: String, file: StaticString = #filePath, line number: UInt = #line) throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try XCTUnwrap(parsed as? [String: Any], file: file, line: number)
    }

    /// libevent's own warnings (it prints `[warn] ...` to stderr by itself) arrive as JSON
    /// records, through libevent's real logger.
    func testLibeventWarningsBecomeJSONRecords() throws {
        let collector = LineCollector()
        Gateway.routeLibeventLogs(to: collector.logger())
        IORuntime.emitLibeventWarning("synthetic warning 42")
        let fields = try object(try XCTUnwrap(collector.lines.last, "nothing reached the logger"))
        XCTAssertEqual(fields["event"] as? String, "libevent")
        XCTAssertEqual(fields["level"] as? String, "warning")
        XCTAssertEqual(fields["message"] as? String, "synthetic warning 42")
    }

    func testShapeOfALine() throws {
        let collector = LineCollector()
        collector.logger().info("listening")
        let line = try XCTUnwrap(collector.lines.first)
        XCTAssertFalse(line.contains("\n"))
        XCTAssertTrue(line.hasPrefix("{\"time\":\""), line)
        let fields = try object(line)
        XCTAssertEqual(fields["level"] as? String, "info")
        XCTAssertEqual(fields["event"] as? String, "listening")
        XCTAssertEqual(fields.count, 3)
        let time = try XCTUnwrap(fields["time"] as? String)
        let pattern = #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#
        XCTAssertNotNil(time.range(of: pattern, options: .regularExpression), time)
    }

    func testTimestampFormatting() {
        var encoder = JSONLineEncoder()
        encoder.appendTimestamp(seconds: 1_795_341_600, milliseconds: 123)  // 2026-11-22T10:00:00Z
        XCTAssertEqual(String(decoding: encoder.bytes, as: UTF8.self), "\"2026-11-22T10:00:00.123Z\"")
        var epoch = JSONLineEncoder()
        epoch.appendTimestamp(seconds: 0, milliseconds: 7)
        XCTAssertEqual(String(decoding: epoch.bytes, as: UTF8.self), "\"1970-01-01T00:00:00.007Z\"")
    }

    func testTimestampIsNow() throws {
        let collector = LineCollector()
        collector.logger().info("now")
        let time = try XCTUnwrap(try object(XCTUnwrap(collector.lines.first))["time"] as? String)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try XCTUnwrap(formatter.date(from: time))
        XCTAssertLessThan(abs(date.timeIntervalSinceNow), 5)
    }

    func testStringEscaping() throws {
        let nasty = "quote\" backslash\\ newline\n tab\t cr\r nul\u{0} bell\u{7} del\u{7F} "
            + "é 漢字 🦊 \u{2028}\u{2029} </script> \u{1F}"
        let collector = LineCollector()
        collector.logger().info("\(nasty)", metadata: [nasty: .string(nasty)])
        let line = try XCTUnwrap(collector.lines.first)
        for raw in ["\n", "\t", "\r", "\u{0}", "\u{7}", "\u{7F}", "\u{2028}", "\u{1F}"] {
            XCTAssertFalse(line.contains(raw), "raw \(raw.unicodeScalars.first!.value) in \(line)")
        }
        for escaped in ["\\\"", "\\\\", "\\u000a", "\\u0000", "\\u0007", "\\u007f", "\\u2028", "\\u2029", "\\u001f"] {
            XCTAssertTrue(line.contains(escaped), "missing \(escaped) in \(line)")
        }
        let fields = try object(line)
        XCTAssertEqual(fields["event"] as? String, nasty)
        XCTAssertEqual(fields[nasty] as? String, nasty)
    }

    func testInvalidUTF8InputIsRepairedToValidJSON() throws {
        let broken = String(decoding: [0x61, 0xFF, 0xFE, 0x62, 0xE2, 0x82], as: UTF8.self)
        let collector = LineCollector()
        collector.logger().info("\(broken)")
        let fields = try object(XCTUnwrap(collector.lines.first))
        XCTAssertEqual(fields["event"] as? String, broken)
    }

    func testMetadataIsFlattenedWithTypes() throws {
        let collector = LineCollector()
        var logger = collector.logger()
        logger[metadataKey: "worker"] = .stringConvertible(3)
        logger.info("request", metadata: [
            "status": .stringConvertible(200),
            "bytes": .stringConvertible(UInt64(1) << 40),
            "ratio": .stringConvertible(0.25),
            "tiny": .stringConvertible(1e-7),
            "nan": .stringConvertible(Double.nan),
            "float": .stringConvertible(Float(1.5)),
            "reused": .stringConvertible(true),
            "closed": .stringConvertible(false),
            "text_number": .string("42"),
            "other": .stringConvertible(ListenAddress(host: "::1", port: 80)),
            "upstream": .dictionary(["host": .string("a.test"), "port": .stringConvertible(443), "tls": .stringConvertible(true)]),
            "tags": .array([.string("x"), .stringConvertible(1), .array([]), .dictionary([:])]),
        ])
        let line = try XCTUnwrap(collector.lines.first)
        let fields = try object(line)
        XCTAssertEqual(fields["worker"] as? Int, 3)
        XCTAssertEqual(fields["status"] as? Int, 200)
        XCTAssertEqual((fields["bytes"] as? NSNumber)?.int64Value, Int64(1) << 40)
        XCTAssertEqual(fields["ratio"] as? Double, 0.25)
        XCTAssertEqual(fields["tiny"] as? Double, 1e-7)
        XCTAssertEqual(fields["nan"] as? String, "nan")
        XCTAssertEqual(fields["float"] as? Double, 1.5)
        XCTAssertTrue(line.contains("\"reused\":true"), line)
        XCTAssertTrue(line.contains("\"closed\":false"), line)
        XCTAssertTrue(line.contains("\"status\":200"), line)
        XCTAssertEqual(fields["text_number"] as? String, "42")
        XCTAssertEqual(fields["other"] as? String, "[::1]:80")
        let upstream = try XCTUnwrap(fields["upstream"] as? [String: Any])
        XCTAssertEqual(upstream["host"] as? String, "a.test")
        XCTAssertEqual(upstream["port"] as? Int, 443)
        XCTAssertTrue(line.contains("\"upstream\":{\"host\":\"a.test\",\"port\":443,\"tls\":true}"), line)
        XCTAssertTrue(line.contains("\"tags\":[\"x\",1,[],{}]"), line)
    }

    func testMetadataPrecedenceAndReservedKeys() throws {
        let provider = Logger.MetadataProvider { ["request_id": "from-provider", "route": "provider"] }
        let collector = LineCollector()
        var logger = collector.logger(provider: provider)
        logger[metadataKey: "route"] = "handler"
        logger[metadataKey: "worker"] = "1"
        logger.info("x", metadata: ["route": "call", "level": "sneaky", "event": "also", "time": "no"])
        let fields = try object(XCTUnwrap(collector.lines.first))
        XCTAssertEqual(fields["route"] as? String, "call")
        XCTAssertEqual(fields["worker"] as? String, "1")
        XCTAssertEqual(fields["request_id"] as? String, "from-provider")
        XCTAssertEqual(fields["level"] as? String, "info")
        XCTAssertEqual(fields["event"] as? String, "x")
        XCTAssertEqual(fields["meta.level"] as? String, "sneaky")
        XCTAssertEqual(fields["meta.event"] as? String, "also")
        XCTAssertEqual(fields["meta.time"] as? String, "no")
    }

    func testMetadataIsAValuePerLogger() throws {
        let collector = LineCollector()
        var first = collector.logger()
        first[metadataKey: "who"] = "first"
        var second = first
        second[metadataKey: "who"] = "second"
        first.info("a")
        second.info("b")
        let lines = try collector.lines.map { try object($0) }
        XCTAssertEqual(lines.map { $0["who"] as? String }, ["first", "second"])
    }

    func testLevelFiltering() throws {
        let collector = LineCollector()
        var logger = collector.logger(level: .warning)
        logger.info("dropped")
        logger.warning("kept")
        logger.logLevel = .critical
        logger.error("dropped too")
        XCTAssertEqual(try collector.lines.map { try object($0)["event"] as? String }, ["kept"])
        XCTAssertEqual(try object(collector.lines[0])["level"] as? String, "warning")
    }

    func testFileDescriptorSinkKeepsConcurrentLinesWhole() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-log-\(UUID().uuidString)").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { unlink(path) }
        let sink = JSONLogSink(fileDescriptor: fd)
        let padding = String(repeating: "x", count: 10_000)  // well past PIPE_BUF
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var logger = Logger(label: "t") { JSONLogHandler(label: $0, sink: sink) }
            logger[metadataKey: "thread"] = .stringConvertible(thread)
            for index in 0..<50 {
                logger.info("line", metadata: ["index": .stringConvertible(index), "padding": .string(padding)])
            }
        }
        close(fd)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.hasSuffix("}\n"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        XCTAssertEqual(lines.count, 400)
        var seen = Set<String>()
        for line in lines {
            let fields = try object(String(line))
            XCTAssertEqual(fields["padding"] as? String, padding)
            seen.insert("\(fields["thread"]!)-\(fields["index"]!)")
        }
        XCTAssertEqual(seen.count, 400)
    }

    func testBootstrapIsIdempotent() {
        AirlockLogging.bootstrap(level: .critical)
        AirlockLogging.bootstrap(level: .debug)  // must not trap
        XCTAssertEqual(Logger(label: "after-bootstrap").logLevel, .critical)
    }
}
