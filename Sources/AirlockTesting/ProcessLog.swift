import Foundation

/// What a child printed: stdout split into lines, stderr kept whole. Filled by one reader thread,
/// read by any; guarded by `condition`, which is broadcast on every new line and when the reader ends.
final class ProcessLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []
    private var partialLine: [UInt8] = []
    private var stderrBytes: [UInt8] = []
    private var readerEnded = false
    /// While set (until the date), the reader holds the stdout bytes it has and reads no more:
    /// the child's stdout pipe fills and its writes block, as with a consumer that stalls.
    private var stdoutPausedUntil: Date?

    static let stderrLimit = 4 << 20

    var allLines: [String] { condition.withLock { lines } }
    var stderrText: String { condition.withLock { String(decoding: stderrBytes, as: UTF8.self) } }
    var hasReaderEnded: Bool { condition.withLock { readerEnded } }

    /// Stops reading stdout until `resumeStdout()`, or for `maxSeconds` at most.
    func pauseStdout(maxSeconds: Double) {
        condition.withLock { stdoutPausedUntil = Date(timeIntervalSinceNow: maxSeconds) }
    }

    func resumeStdout() {
        condition.withLock {
            stdoutPausedUntil = nil
            condition.broadcast()
        }
    }

    func appendStdout(_ bytes: [UInt8]) {
        condition.withLock {
            while let until = stdoutPausedUntil, Date() < until {
                _ = condition.wait(until: until)
            }
            stdoutPausedUntil = nil
            var start = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
                partialLine += bytes[start..<index]
                if partialLine.last == UInt8(ascii: "\r") { partialLine.removeLast() }
                lines.append(String(decoding: partialLine, as: UTF8.self))
                partialLine.removeAll(keepingCapacity: true)
                start = index + 1
            }
            partialLine += bytes[start...]
            condition.broadcast()
        }
    }

    func appendStderr(_ bytes: [UInt8]) {
        condition.withLock {
            if stderrBytes.count < Self.stderrLimit { stderrBytes += bytes.prefix(Self.stderrLimit - stderrBytes.count) }
        }
    }

    /// The reader is done: a last line without newline still counts.
    func endReader() {
        condition.withLock {
            if !partialLine.isEmpty {
                lines.append(String(decoding: partialLine, as: UTF8.self))
                partialLine.removeAll()
            }
            readerEnded = true
            condition.broadcast()
        }
    }

    /// Lines from `index` on; waits (until `limit`) for at least one if there are none and the reader runs.
    func lines(from index: Int, waitingUntil limit: Date) -> (lines: [String], readerEnded: Bool) {
        condition.lock()
        defer { condition.unlock() }
        while lines.count <= index, !readerEnded {
            if !condition.wait(until: limit) { break }
        }
        return (Array(lines[min(index, lines.count)...]), readerEnded)
    }

    /// Waits until the reader has ended. False on timeout.
    func waitForReaderEnd(timeout: Double) -> Bool {
        let limit = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !readerEnded {
            if !condition.wait(until: limit) { return readerEnded }
        }
        return true
    }

    static func parseRecord(_ line: String) -> [String: Any]? {
        guard line.first == "{" else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// Collects the child's stdout and stderr on a thread of its own until both close.
    func startReading(_ child: ChildProcess, waker: Waker, threadName: String) {
        let thread = Thread { [self] in
            _ = ChildProcess.readPipes([child.stdoutFD, child.stderrFD], waker: waker, deadline: nil) { index, bytes in
                if index == 0 { self.appendStdout(bytes) } else { self.appendStderr(bytes) }
            }
            close(child.stdoutFD)
            close(child.stderrFD)
            self.endReader()
        }
        thread.name = threadName
        thread.start()
    }
}
