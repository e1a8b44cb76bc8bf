import AirlockTesting
import Foundation
import XCTest

/// A test class that starts gateways and origins (`airlocks`, `servers`): each is stopped
/// after every test.
class GatewayTestCase: XCTestCase {
    var airlocks: [AirlockProcess] = []
    var servers: [TCPTestServer] = []

    override func tearDown() {
        for a in airlocks { a.stop() }
        for s in servers { s.stop() }
        airlocks = []
        servers = []
        super.tearDown()
    }

    /// An echo server (registered for tearDown): every chunk read is written back until the
    /// client's EOF (then half-closed) or a failed write; reads wait up to `readTimeout` seconds.
    func echoServer(readTimeout: Double = 30) throws -> TCPTestServer {
        let echo = try TCPTestServer { c in
            while let chunk = try? c.read(upTo: 65536, timeout: readTimeout), !chunk.isEmpty {
                if (try? c.write(chunk)) == nil { return }
            }
            c.shutdownWrite()
        }
        servers.append(echo)
        return echo
    }

    /// A client connection with its tunnel to 127.0.0.1:`port` through `a` open (the 200 read);
    /// `first` goes right behind the CONNECT head.
    func openTunnel(_ a: AirlockProcess, to port: UInt16, first: [UInt8] = [],
                    receiveBuffer: Int? = nil) throws -> TCPTestConnection {
        let c = try TCPTestConnection.connect(port: a.port, receiveBuffer: receiveBuffer)
        try c.write(Array("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8) + first)
        let head = String(decoding: try c.read(through: "\r\n\r\n", timeout: 10), as: UTF8.self)
        XCTAssertEqual(head, "HTTP/1.1 200 Connection established\r\n\r\n")
        return c
    }

    /// `size` pattern bytes sent through a tunnel to an echo server (`echo`'s port) while its
    /// answer is read to the end: the answer equal by length and SHA-256, the tunnel's access
    /// record counting `size` each way and ending `closed`. Returns that record.
    func echoEachWay(_ a: AirlockProcess, to echo: UInt16, size: Int, offset: Int) throws -> [String: Any] {
        let c = try openTunnel(a, to: echo)
        defer { c.close() }
        let sent = patternBytes(count: size, offset: offset)
        let writer = Thread {
            try? c.write(sent, timeout: 120)
            c.shutdownWrite()
        }
        writer.start()
        let got = try c.readToEnd(timeout: 120)
        XCTAssertEqual(got.count, size)
        XCTAssertEqual(try sha256Hex(got), try sha256Hex(sent))
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["bytes_in"] as? Int, size)
        XCTAssertEqual(record["bytes_out"] as? Int, size)
        XCTAssertEqual(record["tunnel"] as? String, "closed")
        return record
    }
}

/// Shared helpers: configs for a gateway in front of a test origin, and JSON decoding.
enum Fixture {
    /// The limits every test runs with, overridden per test.
    static func limitsYAML(_ overrides: [String: String]) -> String {
        var l = ["header_timeout": "2s", "upstream_timeout": "3s", "connect_timeout": "2s"]
        l.merge(overrides) { $1 }
        return "limits:\n" + l.sorted { $0.key < $1.key }.map { "  \($0.key): \($0.value)" }.joined(separator: "\n")
    }

    static func gatewayConfig(upstreamPort: UInt16, limits: [String: String] = [:], workers: Int = 2) -> String {
        """
        listen: 127.0.0.1:0
        workers: \(workers)
        \(limitsYAML(limits))
        routes:
          - name: api
            match: { host: "*" }
            upstream: http://127.0.0.1:\(upstreamPort)
        """
    }

    static func forwardConfig(limits: [String: String] = [:], ioUring: String = "auto") -> String {
        """
        listen: 127.0.0.1:0
        workers: 2
        io_uring: \(ioUring)
        \(limitsYAML(limits))
        routes:
          - name: default
            match: { host: "*" }
            upstream: origin
        """
    }

    /// One worker with an admin listener; the first route (`tun`) tunnels CONNECT to
    /// 127.0.0.1:`connectPort`, then `moreRoutes` (route items at the list's indentation).
    static func tunnelConfig(connectPort: UInt16, limits: [String: String] = [:], moreRoutes: String = "") -> String {
        """
        listen: 127.0.0.1:0
        workers: 1
        admin: 127.0.0.1:0
        \(limitsYAML(limits))
        routes:
          - name: tun
            match: { host: "127.0.0.1" }
            connect: tunnel
            connect_ports: [\(connectPort)]
            upstream: origin
        \(moreRoutes)
        """
    }

    /// The `request.access` records `a` has logged that `match` accepts, once there are `count`
    /// of them or after `timeout` seconds (whatever there is then: the caller asserts the count).
    static func accessRecords(_ a: AirlockProcess, count: Int, timeout: Double = 10,
                              where match: ([String: Any]) -> Bool = { _ in true }) -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let records = a.logRecords().filter { $0["event"] as? String == "request.access" && match($0) }
            if records.count >= count || Date() > deadline { return records }
            usleep(50_000)
        }
    }

    /// The admin listener's port, from the `airlock.admin` record it logs when it starts.
    static func adminPort(_ a: AirlockProcess) throws -> UInt16 {
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        return UInt16(try XCTUnwrap(record["port"] as? Int))
    }

    /// The admin listener's `/metrics`, parsed by prometheus_client (`PrometheusText`).
    static func metrics(admin: UInt16) throws -> PrometheusText {
        let c = try RawClient(port: admin)
        defer { c.close() }
        let r = try c.exchange("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        return try PrometheusText(r.body)
    }

    /// The value of an unlabelled metric (`name value`) in the admin listener's `/metrics`.
    static func metric(_ name: String, admin: UInt16) throws -> Double {
        let c = try RawClient(port: admin)
        defer { c.close() }
        let r = try c.exchange("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
        XCTAssertEqual(r.status, 200)
        let line = String(decoding: r.body, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return try XCTUnwrap(line.flatMap { Double($0.split(separator: " ").last ?? "") }, "no \(name) in /metrics")
    }

    static func start(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) throws -> AirlockProcess {
        try AirlockProcess(executable: AirlockProcess.builtExecutable(), configYAML: yaml)
    }

    /// Starts `airlock` the way a user limits it: `ulimit -n N` in a shell, then exec. The
    /// wrapper script lives in `directory`, which the caller removes.
    static func startWithDescriptorLimit(_ nofile: Int, yaml: String, directory: String) throws -> AirlockProcess {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let wrapper = directory + "/airlock-nofile-\(nofile)"
        let script = "#!/bin/sh\nulimit -n \(nofile) || exit 97\nexec '\(AirlockProcess.builtExecutable())' \"$@\"\n"
        try Data(script.utf8).write(to: URL(fileURLWithPath: wrapper))
        guard chmod(wrapper, 0o755) == 0 else { throw AirlockTestingError(.system(errno: errno), "chmod \(wrapper)") }
        return try AirlockProcess(executable: wrapper, configYAML: yaml)
    }

    /// Lowers the running process's soft descriptor limit to its lowest free descriptor
    /// number (hard limit `hard`): its next socket or accept fails with EMFILE until it closes
    /// one. `restoreDescriptorLimit` gives them back.
    static func exhaustDescriptors(of pid: Int32, hard: Int) throws {
        let inUse = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { Int($0) })
        let lowestFree = (0...).first { !inUse.contains($0) }!
        try prlimit(pid, soft: lowestFree, hard: hard)
    }

    static func restoreDescriptorLimit(of pid: Int32, to limit: Int) throws {
        try prlimit(pid, soft: limit, hard: limit)
    }

    private static func prlimit(_ pid: Int32, soft: Int, hard: Int) throws {
        let r = try runProcess("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(soft):\(hard)"], timeout: 10)
        guard r.exitCode == 0 else { throw AirlockTestingError(.process, "prlimit: \(r.stderr)") }
    }

    static func json(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    /// A path in this test process's own directory under the temporary directory, which is
    /// removed when the process exits.
    static func tempFile(_ name: String) -> String {
        _ = removeTempDirectoryAtExit
        try? FileManager.default.createDirectory(atPath: tempDirectory(), withIntermediateDirectories: true)
        return tempDirectory() + "/" + name
    }

    private static func tempDirectory() -> String { NSTemporaryDirectory() + "airlock-it-\(getpid())" }

    private static let removeTempDirectoryAtExit: Void = {
        atexit { try? FileManager.default.removeItem(atPath: Fixture.tempDirectory()) }
    }()
}

extension RawClient {
    /// Sends `text` and reads one response.
    func exchange(_ text: String, method: String = "GET") throws -> RawResponse {
        try send(text)
        return try readResponse(timeout: 10, requestMethod: method)
    }
}
