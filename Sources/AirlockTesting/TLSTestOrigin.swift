import Foundation
import Glibc

/// A real HTTP/1.1-over-TLS origin on 127.0.0.1:<ephemeral>: `Tests/Fixtures/tls/tls_origin.py` run as a child
/// (TLS 1.2 minimum, session tickets on, one thread per connection), serving a chain and key from a `TLSTestPKI`.
/// Every answer is `200`, `text/plain`, body `hello over tls <target>`, except as `Mode` says.
/// What it saw (connections, handshakes, resumptions, SNI, request lines) is read from its stderr log.
public final class TLSTestOrigin: @unchecked Sendable, RecordsRequests {
    public enum Mode: String, Sendable {
        /// Keep-alive, Content-Length bodies; closes with close_notify after `Connection: close` or HTTP/1.0.
        case normal
        /// First response promises `Content-Length: 100`, sends 20 bytes, then a TCP close without close_notify.
        case truncate
        /// First response is `Connection: close` with no length; then a TCP close without close_notify,
        /// so the body must count as truncated.
        case closeDelimited = "close-delimited"
        /// As `closeDelimited`, but close_notify is sent before the close: the body is complete.
        case closeDelimitedWithCloseNotify
    }

    private let process: MonitoredChild
    private var child: ChildProcess { process.child }
    private var log: ProcessLog { process.log }

    /// The port it listens on, from its `PORT <n>` line.
    public let port: UInt16

    /// Starts the origin serving `pki.path(chain)` with `pki.path(key)` and waits (up to `startTimeout` s)
    /// for its `PORT` line. Throws `.process`/`.timeout` with its stderr if it exits or does not start.
    /// `securityLevel`: the origin's own OpenSSL level; 0 lets it serve a chain level 2 refuses.
    /// `dheOnly`: a file of DH parameters in the PKI (`dh1536.pem`): TLS 1.2 DHE-RSA only, over that group.
    public init(pki: TLSTestPKI, chain: String = "leaf-chain.pem", key: String = "leaf.key", mode: Mode = .normal,
                securityLevel: Int? = nil, dheOnly: String? = nil, startTimeout: Double = 15) throws {
        var arguments = [TLSFixtureScripts.origin, "--cert", pki.path(chain), "--key", pki.path(key)]
        if let securityLevel { arguments += ["--security-level", String(securityLevel)] }
        if let dheOnly { arguments += ["--dhe-only", pki.path(dheOnly)] }
        switch mode {
        case .normal: arguments += ["--mode", "normal"]
        case .truncate: arguments += ["--mode", "truncate"]
        case .closeDelimited: arguments += ["--mode", "close-delimited"]
        case .closeDelimitedWithCloseNotify: arguments += ["--mode", "close-delimited", "--close-notify"]
        }
        let python = TLSFixtureScripts.python()
        process = try MonitoredChild(executable: python, arguments: arguments,
                                     environment: ChildProcess.environmentWithoutProxies(), threadName: "TLSTestOrigin")

        let ready = process.awaitReady(timeout: startTimeout, exited: "tls_origin.py exited", readyLine: "printing PORT",
                                       noReadyLine: "tls_origin.py printed no PORT line", recognize: Self.portLine)
        switch ready {
        case .success(let port):
            self.port = port
        case .failure(let failure):
            self.port = 0
            stop()
            throw AirlockTestingError(failure.kind, """
                \(failure.message)
                command: \(python) \(arguments.joined(separator: " "))
                --- stderr ---
                \(String(log.stderrText.suffix(8_000)))
                """)
        }
    }

    deinit {
        stop()
    }

    /// The port of a `PORT <n>` line; nil for any other line.
    private static func portLine(_ line: String) -> Result<UInt16, AirlockTestingError>? {
        guard line.hasPrefix("PORT ") else { return nil }
        guard let port = UInt16(line.dropFirst(5)), port != 0 else {
            return .failure(AirlockTestingError(.process, "tls_origin.py printed a bad port line: \(line)"))
        }
        return .success(port)
    }

    /// `https://<host>:<port><path>`; `localhost` matches the test leaf's DNS name (127.0.0.1 its IP name).
    public func url(_ path: String = "/", host: String = "localhost") -> String {
        "https://\(host):\(port)\(path.hasPrefix("/") ? path : "/" + path)"
    }

    public var pid: Int32 { child.pid }

    /// Everything it logged on stderr so far (one event per line; see tls_origin.py).
    public var logText: String { log.stderrText }

    /// The fields after `event conn=<n> ` of every log line of that event, in order.
    private func events(_ event: String) -> [Substring] {
        let prefix = event + " conn="
        return logText.split(separator: "\n").compactMap { line in
            guard line.hasPrefix(prefix) else { return nil }
            let rest = line.dropFirst(prefix.count).drop { $0 != " " }
            return rest.isEmpty ? rest : rest.dropFirst()
        }
    }

    /// The request line of every request received so far (e.g. "GET /x HTTP/1.1"), in arrival order.
    public var requestLines: [String] { events("request").map(String.init) }

    /// How many requests were logged so far.
    public var requestCount: Int { requestLines.count }

    /// Every non-empty request body received, in order: its length and SHA-256 (hex).
    public var requestBodies: [(bytes: Int, sha256: String)] { digests("body") }

    /// Every `/random/<n>` body sent, in order: its length and SHA-256 (hex).
    public var sentBodies: [(bytes: Int, sha256: String)] { digests("sent") }

    /// The `bytes=` and `sha256=` fields of every line of that event.
    private func digests(_ event: String) -> [(bytes: Int, sha256: String)] {
        events(event).compactMap { fields in
            var bytes: Int?
            var digest: String?
            for f in fields.split(separator: " ") {
                if f.hasPrefix("bytes=") { bytes = Int(f.dropFirst(6)) }
                if f.hasPrefix("sha256=") { digest = String(f.dropFirst(7)) }
            }
            guard let bytes, let digest else { return nil }
            return (bytes, digest)
        }
    }

    /// TCP connections accepted so far.
    public var acceptedConnections: Int { events("accept").count }

    /// TLS handshakes completed so far, resumed or not.
    public var handshakes: Int { events("handshake").count }

    /// Completed handshakes that resumed a session (`session_reused`).
    public var resumedHandshakes: Int { events("handshake").filter { $0.hasPrefix("resumed=yes") }.count }

    /// The error text of every handshake that failed (e.g. the client sent an alert or closed).
    public var handshakeFailures: [String] {
        events("handshake-failed").map { String($0.hasPrefix("error=") ? $0.dropFirst(6) : $0) }
    }

    /// The SNI of every completed handshake, in order; nil where the client sent none.
    public var serverNames: [String?] {
        events("handshake").map { fields in
            guard let field = fields.split(separator: " ").first(where: { $0.hasPrefix("sni=") }) else { return nil }
            let name = field.dropFirst(4)
            return name == "-" ? nil : String(name)
        }
    }

    /// The TLS version of every completed handshake ("TLSv1.3", "TLSv1.2"), in order.
    public var versions: [String] {
        events("handshake").compactMap { fields in
            fields.split(separator: " ").first { $0.hasPrefix("version=") }.map { String($0.dropFirst(8)) }
        }
    }

    /// Waits until at least `n` requests have been logged. False if `timeout` seconds pass first.
    public func waitForRequests(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { requestLines.count >= n }
    }

    /// Waits until at least `n` non-empty request bodies were received. False if `timeout` seconds pass first.
    public func waitForBodies(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { requestBodies.count >= n }
    }

    /// Waits until at least `n` handshakes have completed or failed. False if `timeout` seconds pass first.
    public func waitForHandshakes(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { handshakes + handshakeFailures.count >= n }
    }

    /// Waits until at least `n` connections have been accepted. False if `timeout` seconds pass first.
    public func waitForConnections(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { acceptedConnections >= n }
    }

    /// Polls the log every 10 ms; stderr lines arrive on the reader thread a little after the event.
    private func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Deadline(seconds: timeout)
        while true {
            if condition() { return true }
            if deadline.hasPassed || log.hasReaderEnded { return condition() }
            usleep(10_000)
        }
    }

    /// SIGTERM, wait up to 5 s, then SIGKILL; then ends the reader thread. Idempotent; also on deinit.
    /// The log stays readable afterwards.
    public func stop() {
        process.stop(grace: 5)
    }
}
