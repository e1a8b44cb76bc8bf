import Foundation

/// Runs Debian's headless Chromium the way a user would point it at a proxy: its own certificate
/// verifier (not OpenSSL's), trusting CAs through an NSS database in a throw-away home directory.
public enum Chromium {
    public static let executable = "/usr/bin/chromium"
    public static let certutil = "/usr/bin/certutil"

    /// Fetches `url` through the HTTP proxy on 127.0.0.1:`proxyPort` (loopback targets included)
    /// and returns the page's DOM on stdout (`--dump-dom`); a certificate Chromium refuses leaves its
    /// error page there and `net_error` lines in stderr. `trusting`: PEM CA certificates added to the
    /// NSS database as trusted for TLS servers. Bounded by `timeout` seconds (the process group is killed).
    public static func dumpDOM(_ url: String, proxyPort: UInt16, trusting caPEMs: [String],
                               timeout: Double = 40) throws -> ProcessResult {
        try Requirement.tool(executable)
        try Requirement.tool(certutil)
        let home = NSTemporaryDirectory() + "airlock-chromium-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: home) }
        let nssdb = home + "/.pki/nssdb"
        try FileManager.default.createDirectory(atPath: nssdb, withIntermediateDirectories: true)
        try certutilRun(["-N", "--empty-password", "-d", "sql:" + nssdb])
        for (i, pem) in caPEMs.enumerated() {
            try certutilRun(["-A", "-d", "sql:" + nssdb, "-n", "test-ca-\(i)", "-t", "C,,", "-i", pem])
        }
        let seconds = String(Int(timeout.rounded(.up)))
        return try runProcess("/usr/bin/env", [
            "HOME=\(home)", "/usr/bin/timeout", "-k", "5", seconds, executable,
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            // Less traffic of Chromium's own beside the page (what is left, e.g. a CONNECT to an
            // update host, meets the test's proxy, which has no route for it: nothing leaves loopback).
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
            "--user-data-dir=\(home)/profile", "--proxy-server=http://127.0.0.1:\(proxyPort)",
            "--proxy-bypass-list=<-loopback>", "--enable-logging=stderr", "--v=0", "--dump-dom", url,
        ], timeout: timeout + 15)
    }

    private static func certutilRun(_ args: [String]) throws {
        let r = try runProcess(certutil, args, timeout: 20)
        guard r.exitCode == 0 else { throw AirlockTestingError(.process, "certutil \(args.joined(separator: " ")): \(r.stderr)") }
    }
}

extension Chromium {
    /// One page in headless Chromium driven over the DevTools protocol (on a pipe, by
    /// `Tests/Fixtures/chromium/cdp_page.py`, standard-library Python): evaluate JavaScript in it
    /// as a user's browser runs it, take screenshots, read its console errors. No proxy: the page
    /// talks to the loopback address it was opened at. Everything is bounded: each command by its
    /// own timeout, the whole browser by `lifetime` seconds (the driver kills its process group).
    public final class Page: @unchecked Sendable {
        private let process = Process()
        /// The driver's stdin is a socket, so a write after it exited is an EPIPE error (MSG_NOSIGNAL),
        /// never a SIGPIPE that would end the test process.
        private let commandFD: Int32
        private let output = Pipe()
        private var pending: [UInt8] = []
        private var closed = false
        private let profile: String

        public init(url: String, lifetime: Double = 120) throws {
            try Requirement.tool(Chromium.executable)
            profile = NSTemporaryDirectory() + "airlock-chromium-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
            process.executableURL = URL(fileURLWithPath: TLSFixtureScripts.python())
            process.arguments = [Self.driver, Chromium.executable, profile, url, String(Int(lifetime))]
            process.environment = ChildProcess.environmentWithoutProxies().merging(["HOME": profile]) { $1 }
            let ends = try Descriptors.make("socketpair") {
                var fds: [Int32] = [-1, -1]
                return socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 ? fds : nil
            }
            commandFD = ends[0]
            let childEnd = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
            defer { try? childEnd.close() }
            process.standardInput = childEnd
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let first = try readAnswer(timeout: 40)
            guard first["ready"] as? Bool == true else {
                close()
                throw AirlockTestingError(.process, "chromium did not open \(url): \(first)")
            }
        }

        /// The driver's process id (the browser runs in its own process group under it).
        public var driverPID: Int32 { process.processIdentifier }

        /// `Tests/Fixtures/chromium/cdp_page.py`, beside the TLS fixtures.
        static var driver: String {
            URL(fileURLWithPath: TLSFixtureScripts.directory).deletingLastPathComponent()
                .appendingPathComponent("chromium/cdp_page.py").path
        }

        /// The value of `expression` (a promise is awaited), as JSON decodes it; throws the page's exception.
        @discardableResult
        public func evaluate(_ expression: String, timeout: Double = 15) throws -> Any? {
            let answer = try command(["eval": expression], timeout: timeout)
            if let error = answer["error"] { throw AirlockTestingError(.process, "page: \(error) in \(expression)") }
            return answer["value"]
        }

        /// Evaluates `expression` every 50 ms until it is true, for at most `timeout` seconds.
        /// Returns whether it became true. An exception (say, while the page reloads) counts as
        /// not yet; the last one is thrown if the time runs out on it.
        public func wait(until expression: String, timeout: Double) throws -> Bool {
            let deadline = Deadline(seconds: timeout)
            while true {
                do {
                    if try evaluate("Boolean(\(expression))") as? Bool == true { return true }
                    if deadline.hasPassed { return false }
                } catch {
                    if deadline.hasPassed { throw error }
                }
                usleep(50_000)
            }
        }

        /// A PNG of the viewport at `path`.
        public func screenshot(to path: String) throws {
            let answer = try command(["screenshot": path], timeout: 20)
            if let error = answer["error"] { throw AirlockTestingError(.process, "screenshot: \(error)") }
        }

        /// Console errors, uncaught exceptions and the browser's error log entries since the page opened.
        public func consoleErrors() throws -> [String] {
            try command(["console": true], timeout: 10)["value"] as? [String] ?? ["(no answer)"]
        }

        public func close() {
            if process.isRunning {
                _ = try? command(["quit": true], timeout: 5)
                shutdown(commandFD, Int32(SHUT_WR))
                let deadline = Deadline(seconds: 10)
                while process.isRunning, !deadline.hasPassed { usleep(20_000) }
                if process.isRunning { process.terminate() }
            }
            try? FileManager.default.removeItem(atPath: profile)
            if !closed {
                closed = true
                Glibc.close(commandFD)
            }
        }

        deinit { close() }

        private func command(_ object: [String: Any], timeout: Double) throws -> [String: Any] {
            var line = try JSONSerialization.data(withJSONObject: object)
            line.append(0x0A)
            var sent = 0
            while sent < line.count {
                let n = line.withUnsafeBytes { send(commandFD, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw AirlockTestingError(.process, "chromium driver: \(String(cString: strerror(errno)))") }
                sent += n
            }
            return try readAnswer(timeout: timeout)
        }

        /// One JSON line from the driver, waiting at most `timeout` seconds.
        private func readAnswer(timeout: Double) throws -> [String: Any] {
            let fd = output.fileHandleForReading.fileDescriptor
            let deadline = Deadline(seconds: timeout)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                if let nl = pending.firstIndex(of: 0x0A) {
                    let line = Array(pending[..<nl])
                    pending.removeSubrange(...nl)
                    let object = try JSONSerialization.jsonObject(with: Data(line))
                    return object as? [String: Any] ?? [:]
                }
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let rc = poll(&p, 1, deadline.remainingMilliseconds)
                if rc < 0, errno == EINTR { continue }
                guard rc > 0 else { throw AirlockTestingError(.process, "chromium driver: no answer in \(timeout) s") }
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                guard n > 0 else { throw AirlockTestingError(.process, "chromium driver exited") }
                pending += buffer[0..<n]
            }
        }
    }
}
