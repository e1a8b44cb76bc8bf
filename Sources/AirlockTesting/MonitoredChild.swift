import Foundation
import Glibc
import Synchronization

/// A child process whose stdout and stderr are read on a background thread (`ProcessLog`),
/// with the waker that unblocks that reader: the part `AirlockProcess` and `TLSTestOrigin`
/// share (spawn, wait for the line that says it is ready, stop).
final class MonitoredChild: @unchecked Sendable {
    let child: ChildProcess
    let log: ProcessLog
    private let waker: Waker
    private let stopped = Mutex(false)

    /// Spawns `executable arguments...` and starts reading its output on a thread named
    /// `threadName:<pid>`.
    init(executable: String, arguments: [String], environment: [String: String], threadName: String) throws {
        let waker = try Waker()
        do {
            child = try ChildProcess.spawn(executable: executable, arguments: arguments, environment: environment)
        } catch {
            waker.close()
            throw error
        }
        self.waker = waker
        log = ProcessLog()
        log.startReading(child, waker: waker, threadName: "\(threadName):\(child.pid)")
    }

    /// Waits up to `timeout` s for a stdout line that `recognize` answers (with the port, or
    /// with why the line is wrong). Fails if the child exits first (`exited`, e.g. "airlock
    /// exited", then "with status N before <readyLine>") or time runs out ("<noReadyLine>
    /// within T s").
    func awaitReady(timeout: Double, exited: String, readyLine: String, noReadyLine: String,
                    recognize: (String) -> Result<UInt16, AirlockTestingError>?) -> Result<UInt16, AirlockTestingError> {
        let deadline = Deadline(seconds: timeout)
        var seen = 0
        while true {
            // Wake at least every 100 ms to notice an exit whose stdout is still held open elsewhere.
            let slice = Date(timeIntervalSinceNow: min(0.1, Double(deadline.remainingMilliseconds) / 1000))
            let (lines, ended) = log.lines(from: seen, waitingUntil: slice)
            seen += lines.count
            for line in lines {
                if let answer = recognize(line) { return answer }
            }
            if let status = child.exitStatusIfExited() {
                _ = log.waitForReaderEnd(timeout: 1)
                if log.allLines.count > seen { continue }  // a last line may say it is ready after all
                return .failure(AirlockTestingError(.process, "\(exited) with status \(status) before \(readyLine)"))
            }
            if ended, lines.isEmpty, deadline.hasPassed == false {
                // stdout closed but the child lives on: it will never say more; wait for exit or the deadline.
                usleep(20_000)
            }
            if deadline.hasPassed {
                return .failure(AirlockTestingError(.timeout, "\(noReadyLine) within \(timeout) s"))
            }
        }
    }

    /// SIGTERM, SIGKILL after `grace` s, then ends the reader thread. True the first time only.
    @discardableResult
    func stop(grace: Double) -> Bool {
        let first: Bool = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return false }
        child.terminate(grace: grace)
        // The child is gone; its pipes reach end of file unless a grandchild holds them.
        if !log.waitForReaderEnd(timeout: 2) {
            waker.wake()
        }
        if log.waitForReaderEnd(timeout: 5) { waker.close() }
        return true
    }
}
