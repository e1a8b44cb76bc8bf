import Foundation
import Glibc
import Synchronization

/// `openssl s_server` on 127.0.0.1:<ephemeral> as a child process, for TLS behaviour Python's ssl module
/// cannot produce (old protocol versions, a server-initiated renegotiation). Its stdin is a FIFO this object
/// holds: `send` writes there, and s_server sends those bytes to the connected client, or acts on its
/// one-letter commands (a line `r` asks the client to renegotiate). Its output (what the client sent, errors)
/// is read on a background thread.
public final class OpenSSLServer: @unchecked Sendable {
    public static let executable = "/usr/bin/openssl"

    private let process: MonitoredChild
    private let directory: String
    /// The write end of s_server's stdin FIFO; -1 once stopped.
    private let stdinFD: Mutex<Int32>
    /// The port from s_server's `ACCEPT 127.0.0.1:<port>` line.
    public let port: UInt16

    /// Starts `openssl s_server -accept 127.0.0.1:0 arguments...` and waits (up to `startTimeout` s) for its
    /// ACCEPT line. Throws `.process`/`.timeout` with its output if it exits or does not start.
    public init(arguments: [String], startTimeout: Double = 15) throws {
        directory = try makeTemporaryDirectory(prefix: "airlock-s_server")
        let fifo = directory + "/stdin"
        guard mkfifo(fifo, 0o600) == 0 else {
            let error = Descriptors.systemError("mkfifo \(fifo)")
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        // Read-write, so neither this open nor the child's blocks, and s_server never reads end of file.
        let fd = open(fifo, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let error = Descriptors.systemError("open \(fifo)")
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        stdinFD = Mutex(fd)
        let fullArguments = ["-c", "exec \"$0\" s_server -accept 127.0.0.1:0 \"$@\" < \"$FIFO\"", Self.executable] + arguments
        do {
            process = try MonitoredChild(executable: "/bin/sh", arguments: fullArguments,
                                         environment: ChildProcess.environmentWithoutProxies().merging(["FIFO": fifo]) { $1 },
                                         threadName: "OpenSSLServer")
        } catch {
            Glibc.close(fd)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        let ready = process.awaitReady(timeout: startTimeout, exited: "openssl s_server exited", readyLine: "printing ACCEPT",
                                       noReadyLine: "openssl s_server printed no ACCEPT line", recognize: Self.acceptLine)
        switch ready {
        case .success(let port):
            self.port = port
        case .failure(let failure):
            self.port = 0
            let output = self.output
            stop()
            throw AirlockTestingError(failure.kind, "\(failure.message)\narguments: \(arguments)\n--- output ---\n\(output)")
        }
    }

    deinit { stop() }

    /// The port of an `ACCEPT host:port` line; nil for any other line.
    private static func acceptLine(_ line: String) -> Result<UInt16, AirlockTestingError>? {
        guard line.hasPrefix("ACCEPT") else { return nil }
        guard let colon = line.lastIndex(of: ":"), let port = UInt16(line[line.index(after: colon)...]), port != 0 else {
            return .failure(AirlockTestingError(.process, "s_server printed an ACCEPT line without a port: \(line)"))
        }
        return .success(port)
    }

    /// Everything s_server printed so far: stdout lines, then stderr.
    public var output: String {
        process.log.allLines.joined(separator: "\n") + "\n" + process.log.stderrText
    }

    /// Waits up to `timeout` s until `output` contains `text`.
    public func waitForOutput(_ text: String, timeout: Double) -> Bool {
        let deadline = Deadline(seconds: timeout)
        while !output.contains(text) {
            if deadline.hasPassed { return false }
            usleep(20_000)
        }
        return true
    }

    /// Writes `text` to s_server's stdin, in one write.
    public func send(_ text: String) throws {
        try stdinFD.withLock { stdinFD throws(AirlockTestingError) in
            guard stdinFD >= 0 else { throw AirlockTestingError(.closed, "OpenSSLServer is stopped") }
            let bytes = Array(text.utf8)
            let n = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress, $0.count) }
            guard n == bytes.count else { throw Descriptors.systemError("write to s_server's stdin") }
        }
    }

    /// SIGTERM (SIGKILL after 5 s), then closes the FIFO and removes it. Idempotent; also on deinit.
    public func stop() {
        process.stop(grace: 5)
        stdinFD.withLock { stdinFD in
            if stdinFD >= 0 { Glibc.close(stdinFD) }
            stdinFD = -1
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
