import Foundation
import Glibc
import Synchronization

/// A child started with `posix_spawn`, its stdout and stderr on pipes, stdin from /dev/null.
/// The child gets default signal dispositions and an empty signal mask whatever the test process set.
/// This object is the only one that reaps it, so `signal` never hits a recycled pid.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    let stdoutFD: Int32
    let stderrFD: Int32
    let executable: String

    /// Set once the child is reaped.
    private let exitStatus = Mutex<Int32?>(nil)

    private init(pid: pid_t, stdoutFD: Int32, stderrFD: Int32, executable: String) {
        self.pid = pid
        self.stdoutFD = stdoutFD
        self.stderrFD = stderrFD
        self.executable = executable
    }

    static func spawn(executable: String, arguments: [String], environment: [String: String]) throws -> ChildProcess {
        guard access(executable, X_OK) == 0 else {
            throw AirlockTestingError(.process, "\(executable) is not an executable file: \(String(cString: strerror(errno)))")
        }
        let outPipe = try makePipe()
        let errPipe: [Int32]
        do { errPipe = try makePipe() } catch {
            outPipe.forEach { _ = close($0) }
            throw error
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = Descriptors.spawning {
            posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        }
        close(outPipe[1])
        close(errPipe[1])
        guard rc == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw Descriptors.systemError("posix_spawn \(executable)", rc)
        }
        return ChildProcess(pid: pid, stdoutFD: outPipe[0], stderrFD: errPipe[0], executable: executable)
    }

    private static func makePipe() throws -> [Int32] {
        try Descriptors.make("pipe") {
            var fds: [Int32] = [-1, -1]
            return pipe(&fds) == 0 ? fds : nil
        }
    }

    /// The exit status if the child has exited (reaping it), else nil. Exit code, or 128 + signal number.
    func exitStatusIfExited() -> Int32? {
        exitStatus.withLock { exitStatus in
            if let exitStatus { return exitStatus }
            var status: Int32 = 0
            var rc: pid_t
            repeat { rc = waitpid(pid, &status, WNOHANG) } while rc < 0 && errno == EINTR
            if rc == pid {
                exitStatus = Self.decode(status)
            } else if rc < 0 {
                exitStatus = -1  // ECHILD: someone else reaped it; it is gone either way
            }
            return exitStatus
        }
    }

    /// Waits up to `timeout` seconds for the child to exit.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = Deadline(seconds: timeout)
        while true {
            if let status = exitStatusIfExited() { return status }
            if deadline.hasPassed { return nil }
            usleep(5_000)
        }
    }

    /// Sends `sig` unless the child has already been reaped.
    func signal(_ sig: Int32) {
        exitStatus.withLock { exitStatus in
            guard exitStatus == nil else { return }
            _ = kill(pid, sig)
        }
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds. Returns the exit status.
    @discardableResult
    func terminate(grace: Double) -> Int32? {
        if let status = exitStatusIfExited() { return status }
        signal(SIGTERM)
        if let status = waitForExit(timeout: grace) { return status }
        signal(SIGKILL)
        return waitForExit(timeout: 5)
    }

    private static func decode(_ status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// Reads `fds` (pipes) until each reaches end of file, calling `onData(index, bytes)`.
    /// Returns false if the deadline passed or the waker fired first. Closes nothing.
    static func readPipes(_ fds: [Int32], waker: Waker?, deadline: Deadline?,
                          onData: (Int, [UInt8]) -> Void) -> Bool {
        var open = fds.map { _ in true }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while open.contains(true) {
            var pollSet = zip(fds, open).map { pollfd(fd: $1 ? $0 : -1, events: Int16(POLLIN), revents: 0) }
            if let waker { pollSet.append(pollfd(fd: waker.readFD, events: Int16(POLLIN), revents: 0)) }
            let rc = poll(&pollSet, nfds_t(pollSet.count), deadline?.remainingMilliseconds ?? -1)
            if rc < 0 {
                if errno == EINTR { continue }
                return false
            }
            if waker != nil, pollSet[fds.count].revents != 0 { return false }
            if rc == 0, deadline?.hasPassed ?? false { return false }
            for index in fds.indices where open[index] && pollSet[index].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fds[index], $0.baseAddress!, $0.count) }
                if n > 0 {
                    onData(index, Array(buffer[0..<n]))
                } else if n == 0 || (errno != EINTR && errno != EAGAIN) {
                    open[index] = false
                }
            }
        }
        return true
    }

    /// The test process's environment without proxy settings, so children talk to the address they are given.
    static func environmentWithoutProxies() -> [String: String] {
        ProcessInfo.processInfo.environment.filter { key, _ in
            !["http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"].contains(key.lowercased())
        }
    }
}
