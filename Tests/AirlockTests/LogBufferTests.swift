import Foundation
import Glibc
import Logging
import XCTest
@testable import Airlock

/// Lines handed to a closure sink, from any thread.
private final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []
    var all: [String] { lock.withLock { collected } }
    func append(_ line: String) { lock.withLock { collected.append(line) } }
}

/// A worker's `LogBuffer` and the `JSONLogSink` queue behind it: records are handed over in
/// batches (never one write each), the queue is bounded and drops whole batches (counted and
/// reported), lines stay whole across threads, and records keep their order.
final class LogBufferTests: XCTestCase {
    private func object(_ line: Substring) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    private static func record(_ serial: Int, from source: String = "t", padding: Int = 0) -> [UInt8] {
        JSONLogHandler.encode(level: .info, message: "request.access", metadata: [
            "serial": .stringConvertible(serial), "source": .string(source),
            "padding": .string(String(repeating: "x", count: padding)),
        ])
    }

    private func tempFile() -> (fd: Int32, path: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-logbuf-\(UUID().uuidString)").path
        return (open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600), path)
    }

    /// Records logged through a buffered handler reach the sink only when the buffer is
    /// flushed (the loop iteration ends) or holds `flushBytes`, and then all at once, in order.
    func testRecordsGatherUntilFlushOrThreshold() {
        let lines = Lines()
        let sink = JSONLogSink { lines.append($0) }
        let buffer = LogBuffer(sink: sink, flushBytes: 1000, reserve: 1 << 20)
        var logger = Logger(label: "t") { JSONLogHandler(label: $0, sink: sink) }
        logger.handler = (logger.handler as! JSONLogHandler).buffered(into: buffer)
        for i in 0..<3 { logger.info("request.access", metadata: ["serial": .stringConvertible(i)]) }
        XCTAssertEqual(lines.all.count, 0, "nothing is written per record")
        XCTAssertEqual(buffer.pendingRecords, 3)
        buffer.flush()
        XCTAssertEqual(lines.all.count, 3, "the iteration's records go out together")
        XCTAssertTrue(buffer.isEmpty)
        buffer.flush()
        XCTAssertEqual(lines.all.count, 3, "an empty flush hands nothing over")

        // ~300 bytes each: the 4th crosses 1000 bytes and the buffer hands over all four.
        for i in 3..<6 { buffer.append(line: Self.record(i, padding: 200)) }
        XCTAssertEqual(lines.all.count, 3)
        buffer.append(line: Self.record(6, padding: 200))
        XCTAssertEqual(lines.all.count, 7)
        XCTAssertTrue(buffer.isEmpty)
        let serials = lines.all.compactMap { object(Substring($0))?["serial"] as? Int }
        XCTAssertEqual(serials, Array(0..<7))
    }

    /// A descriptor nobody reads (a pipe shrunk to one page): `submit` never blocks; batches
    /// beyond the bound are dropped whole and counted; once the pipe is read, what was kept
    /// arrives whole and in order, followed by `airlock.log-dropped` with the count.
    func testFullQueueDropsWholeBatchesCountsAndReportsThem() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[1], 1031 /* F_SETPIPE_SZ */, 4096)
        let sink = JSONLogSink(fileDescriptor: fds[1])
        let buffer = LogBuffer(sink: sink, reserve: 16 * 1024)
        var kept: [Int] = []
        var serial = 0
        for _ in 0..<40 {
            var batch: [Int] = []
            for _ in 0..<4 {
                buffer.append(line: Self.record(serial, padding: 900))
                batch.append(serial)
                serial += 1
            }
            let before = sink.droppedRecords
            buffer.flush()
            let lost = sink.droppedRecords - before
            XCTAssertTrue(lost == 0 || lost == 4, "a batch is kept or dropped whole (\(lost))")
            if lost == 0 { kept += batch }
        }
        let dropped = 160 - kept.count
        XCTAssertGreaterThan(dropped, 0, "the queue is bounded")
        XCTAssertGreaterThan(kept.count, 0)
        XCTAssertEqual(sink.droppedRecords, UInt64(dropped))

        // Read until the drop report arrives (bounded: 10 s, 4,000 reads).
        var text: [UInt8] = []
        var reported = 0
        let limit = Date(timeIntervalSinceNow: 10)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<4000 where reported < dropped && Date() < limit {
            var p = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 200) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress!, $0.count) }
            guard n > 0 else { break }
            text += chunk[0..<n]
            reported = text.split(separator: UInt8(ascii: "\n")).compactMap { object(Substring(decoding: $0, as: UTF8.self)) }
                .filter { $0["event"] as? String == "airlock.log-dropped" }
                .compactMap { $0["dropped"] as? Int }.reduce(0, +)
        }
        XCTAssertEqual(reported, dropped, "every dropped record is reported")
        let records = String(decoding: text, as: UTF8.self).split(separator: "\n").map { object($0) }
        XCTAssertFalse(records.contains { $0 == nil }, "every line is whole JSON")
        XCTAssertEqual(records.compactMap { $0?["serial"] as? Int }, kept, "kept records, whole batches, in order")
    }

    /// Buffers on three threads and direct lines from three more, each line past PIPE_BUF,
    /// into one pipe (where a write above PIPE_BUF is not atomic) read by a slow reader: every
    /// line whole, each thread's records all present and in order.
    func testBatchesFromManyThreadsStayWholeAndOrdered() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let reader = fds[0]
        defer { close(reader) }
        _ = fcntl(fds[1], 1031 /* F_SETPIPE_SZ */, 4096)
        let collected = Lines()
        let done = DispatchSemaphore(value: 0)
        Thread {
            // Until end of file or 20 s (bounded); small reads keep the pipe full.
            var text: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 3000)
            let limit = Date(timeIntervalSinceNow: 20)
            while Date() < limit {
                var p = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 200) > 0 else { continue }
                let n = chunk.withUnsafeMutableBytes { read(reader, $0.baseAddress!, $0.count) }
                if n <= 0 { break }
                text += chunk[0..<n]
            }
            collected.append(String(decoding: text, as: UTF8.self))
            done.signal()
        }.start()
        let sink = JSONLogSink(fileDescriptor: fds[1])
        let buffers = (0..<3).map { _ in LogBuffer(sink: sink, flushBytes: 32 * 1024) }
        DispatchQueue.concurrentPerform(iterations: 6) { t in
            for i in 0..<100 {
                let line = Self.record(i, from: "thread-\(t)", padding: 5000)
                if t >= 3 {
                    sink.write(line: line)
                } else {
                    buffers[t].append(line: line)
                    if i % 7 == 6 { buffers[t].flush() }
                }
            }
            if t < 3 { buffers[t].flush() }
        }
        sink.flush()
        close(fds[1])
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(sink.droppedRecords, 0)
        let records = (collected.all.first ?? "").split(separator: "\n").map { object($0) }
        XCTAssertEqual(records.count, 600)
        XCTAssertFalse(records.contains { $0 == nil }, "every line is whole JSON")
        for t in 0..<6 {
            let serials = records.compactMap { $0 }.filter { $0["source"] as? String == "thread-\(t)" }.compactMap { $0["serial"] as? Int }
            XCTAssertEqual(serials, Array(0..<100), "thread \(t)")
        }
    }

    /// A line written directly (a lifecycle record such as `airlock.stopped`) comes after
    /// every batch queued before it; queued batches are written by the writer thread without
    /// any flush call (its timer).
    func testDirectLineFollowsQueuedBatchesAndTheWriterFlushesByItself() throws {
        let (fd, path) = tempFile()
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd); unlink(path) }
        let sink = JSONLogSink(fileDescriptor: fd)
        let buffer = LogBuffer(sink: sink)
        for i in 0..<10 { buffer.append(line: Self.record(i)) }
        buffer.flush()
        sink.write(line: Self.record(99, from: "direct"))
        for i in 10..<20 { buffer.append(line: Self.record(i)) }
        buffer.flush()
        // Bounded wait for the writer thread to write the second batch (no flush call).
        var serials: [Int] = []
        for _ in 0..<100 {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            serials = text.split(separator: "\n").compactMap { object($0)?["serial"] as? Int }
            if serials.count == 21 { break }
            usleep(50_000)
        }
        XCTAssertEqual(serials, Array(0..<10) + [99] + Array(10..<20))
    }
}
