import Foundation

/// How a finished child process ended and what it printed.
public struct ProcessResult: Sendable {
    /// Exit code, or 128 + signal number if a signal ended it.
    public var exitCode: Int32
    public var stdout: [UInt8]
    public var stderr: String
    public var stdoutString: String { String(decoding: stdout, as: UTF8.self) }

    public init(exitCode: Int32, stdout: [UInt8], stderr: String) {
        self.exitCode = exitCode
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs `executable` with `arguments` to completion and returns its exit status and output.
/// If it has not finished after `timeout` seconds it is killed and the call throws `.timeout`.
/// Proxy variables are removed from the child's environment.
public func runProcess(_ executable: String, _ arguments: [String], timeout: Double = 30) throws -> ProcessResult {
    let child = try ChildProcess.spawn(executable: executable, arguments: arguments,
                                       environment: ChildProcess.environmentWithoutProxies())
    defer {
        close(child.stdoutFD)
        close(child.stderrFD)
    }
    var out: [UInt8] = []
    var err: [UInt8] = []
    let finished = ChildProcess.readPipes([child.stdoutFD, child.stderrFD], waker: nil,
                                          deadline: Deadline(seconds: timeout)) { index, bytes in
        if index == 0 { out += bytes } else { err += bytes }
    }
    guard finished, let status = child.waitForExit(timeout: 5) else {
        child.signal(SIGKILL)
        _ = child.waitForExit(timeout: 5)
        throw AirlockTestingError(.timeout, "\(executable) \(arguments) did not finish within \(timeout) s; stderr: \(String(decoding: err, as: UTF8.self))")
    }
    return ProcessResult(exitCode: status, stdout: out, stderr: String(decoding: err, as: UTF8.self))
}
