import Foundation
import Glibc
import XCTest

/// Starts the built `airlock` executable as a child process, like a user would:
/// `airlock run --config <temp file> <extraArgs>`, stdout read as JSON log lines on a background thread.
public final class AirlockProcess: @unchecked Sendable {
    private let process: MonitoredChild
    private var child: ChildProcess { process.child }
    private var log: ProcessLog { process.log }
    private let directory: String

    /// The port from the `airlock.listening` log record.
    public let port: UInt16
    /// The config file the child was started with.
    public let configPath: String

    /// Writes `configYAML` to a temp file, starts `executable run --config FILE extraArgs...`, and waits (up to
    /// `startTimeout` s) for a stdout JSON line whose "event" is "airlock.listening"; its integer "port" is
    /// `port`. Throws if the child exits or the time runs out, with its stderr and stdout in the error.
    /// The child inherits this process's environment without proxy variables, plus `environment`.
    public init(executable: String, configYAML: String, extraArgs: [String] = [], startTimeout: Double = 15,
                environment: [String: String] = [:]) throws {
        directory = try makeTemporaryDirectory(prefix: "airlock-process")
        configPath = directory + "/airlock.yaml"
        do {
            try Data(configYAML.utf8).write(to: URL(fileURLWithPath: configPath))
            process = try MonitoredChild(executable: executable, arguments: ["run", "--config", configPath] + extraArgs,
                                         environment: ChildProcess.environmentWithoutProxies().merging(environment) { $1 },
                                         threadName: "AirlockProcess")
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }

        let ready = process.awaitReady(timeout: startTimeout, exited: "airlock exited",
                                       readyLine: "logging airlock.listening",
                                       noReadyLine: "no airlock.listening log line", recognize: Self.listeningPort)
        switch ready {
        case .success(let port):
            self.port = port
        case .failure(let failure):
            self.port = 0
            stop()
            let stdout = log.allLines.suffix(50).joined(separator: "\n")
            throw AirlockTestingError(failure.kind, """
                \(failure.message)
                command: \(executable) run --config \(configPath) \(extraArgs.joined(separator: " "))
                --- stderr ---
                \(String(log.stderrText.suffix(8_000)))
                --- stdout (last 50 lines) ---
                \(stdout)
                """)
        }
    }

    deinit {
        stop()
    }

    /// The port of an `airlock.listening` record; nil for any other line.
    private static func listeningPort(_ line: String) -> Result<UInt16, AirlockTestingError>? {
        guard let record = ProcessLog.parseRecord(line), record["event"] as? String == "airlock.listening" else {
            return nil
        }
        guard let port = integer(record["port"]), (1...65_535).contains(port) else {
            return .failure(AirlockTestingError(.process, "airlock.listening without a valid integer port: \(line)"))
        }
        return .success(UInt16(port))
    }

    private static func integer(_ value: Any?) -> Int? {
        switch value {
        case let number as NSNumber: return Double(number.intValue) == number.doubleValue ? number.intValue : nil
        case let int as Int: return int
        case let text as String: return Int(text)
        default: return nil
        }
    }

    public var pid: Int32 { child.pid }

    /// Every stdout line so far, without line terminators.
    public var logLines: [String] { log.allLines }

    /// Stops reading the child's stdout (its pipe fills, and its writes to stdout block) until
    /// `resumeStdout()`, `stop()`, or `maxSeconds` have passed.
    public func pauseStdout(maxSeconds: Double = 60) {
        log.pauseStdout(maxSeconds: maxSeconds)
    }

    /// Reads stdout again, starting with what the pipe held.
    public func resumeStdout() {
        log.resumeStdout()
    }

    /// Everything the child wrote to stderr so far.
    public var stderrText: String { log.stderrText }

    /// The stdout lines that parse as JSON objects; other lines are skipped.
    public func logRecords() -> [[String: Any]] {
        log.allLines.compactMap(ProcessLog.parseRecord)
    }

    /// The first record (from the start of the log, not just new ones) matching `predicate`, waiting up to
    /// `timeout` seconds for it to appear. Nil on timeout, or once stdout has closed without a match.
    public func waitForLog(timeout: Double, where predicate: ([String: Any]) -> Bool) -> [String: Any]? {
        let limit = Date(timeIntervalSinceNow: max(0, timeout))
        var seen = 0
        while true {
            let (lines, ended) = log.lines(from: seen, waitingUntil: limit)
            seen += lines.count
            for line in lines {
                if let record = ProcessLog.parseRecord(line), predicate(record) { return record }
            }
            if ended || Date() >= limit {
                if log.allLines.count > seen { continue }
                return nil
            }
        }
    }

    /// VmRSS in KiB, as `readResidentMemoryKiB`, for callers that do not handle errors: a dead
    /// Airlock fails the calling test (XCTFail with the reason) and reads as `Int.max / 2`,
    /// so no "memory stayed flat" comparison passes on it.
    public func residentMemoryKiB(file: StaticString = #filePath, line: UInt = #line) -> Int {
        do {
            return try readResidentMemoryKiB()
        } catch {
            XCTFail("\(error)", file: file, line: line)
            return Int.max / 2
        }
    }

    /// VmRSS from /proc/PID/status in KiB, always positive. Throws `.process` if Airlock has exited
    /// (a zombie has no VmRSS; a reaped one no status file) or the line is missing or not positive,
    /// so "memory stayed flat" cannot pass because Airlock died.
    public func readResidentMemoryKiB() throws -> Int {
        func gone(_ why: String) -> AirlockTestingError {
            AirlockTestingError(.process, """
                no resident memory for airlock (pid \(child.pid)): \(why)
                --- stderr ---
                \(String(log.stderrText.suffix(4_000)))
                """)
        }
        if let status = child.exitStatusIfExited() { throw gone("it exited with status \(status)") }
        guard let status = try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8) else {
            throw gone("/proc/\(child.pid)/status cannot be read")
        }
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else {
            throw gone("no VmRSS line (a zombie)")
        }
        guard let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? ""),
              kib > 0 else {
            throw gone("unreadable VmRSS: \(line)")
        }
        return kib
    }

    /// Sends `sig` to the child (nothing once it has been reaped).
    public func signal(_ sig: Int32) {
        child.signal(sig)
    }

    /// The exit status (exit code, or 128 + signal), or nil if it has not exited within `timeout` seconds.
    public func waitForExit(timeout: Double) -> Int32? {
        child.waitForExit(timeout: timeout)
    }

    /// SIGTERM, wait up to 10 s, then SIGKILL; then ends the reader thread and removes the temp config.
    /// Idempotent; also on deinit.
    public func stop() {
        log.resumeStdout()
        guard process.stop(grace: 10) else { return }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The built binary: `$AIRLOCK_EXECUTABLE` if set, else `airlock` beside the running test bundle, else
    /// `<package root>/.build/debug/airlock` (package root derived from this source file's #filePath).
    /// Returns the last candidate even if it does not exist, so the failure names the path.
    public static func builtExecutable() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["AIRLOCK_EXECUTABLE"], !path.isEmpty { return path }
        // On Linux the test bundle is an executable (`<build dir>/AirlockPackageTests.xctest`) beside `airlock`.
        let bundles = CommandLine.arguments.filter { $0.hasSuffix(".xctest") }
            + [(try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""]
        var candidates = bundles.filter { !$0.isEmpty }.map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().path + "/airlock"
        }
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // AirlockTesting
            .deletingLastPathComponent()  // Sources
            .deletingLastPathComponent()  // package root
        candidates.append(root.path + "/.build/debug/airlock")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[candidates.count - 1]
    }
}
