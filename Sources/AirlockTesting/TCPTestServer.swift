import Foundation
import Glibc

/// A TCP listener on 127.0.0.1:<ephemeral> that hands every accepted connection to `handler`
/// on a thread of its own: the far end of a CONNECT tunnel (echo, a large download, a
/// half-close, silence), scripted per test with blocking, timeout-bounded `TCPTestConnection`
/// calls.
public final class TCPTestServer: @unchecked Sendable {
    public let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var stopped = false
    private var accepted = 0
    private let handler: @Sendable (TCPTestConnection) -> Void

    public init(handler: @escaping @Sendable (TCPTestConnection) -> Void) throws {
        self.handler = handler
        (listener, port) = try Socket.listenOnLoopback(backlog: 64)
        let t = Thread { [self] in run() }
        t.start()
    }

    deinit { stop() }

    /// Connections accepted so far.
    public var acceptedCount: Int { lock.withLock { accepted } }

    /// Waits until at least `n` connections have been accepted. False if `timeout` seconds pass first.
    public func waitForAccepted(_ n: Int, timeout: Double) -> Bool {
        let deadline = Deadline(seconds: timeout)
        while acceptedCount < n {
            if deadline.hasPassed { return false }
            usleep(5_000)
        }
        return true
    }

    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run() {
        while !isStopped {
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { continue }
            Socket.setNoDelay(fd)
            lock.withLock { accepted += 1 }
            let connection = TCPTestConnection(fd: fd)
            let t = Thread { [handler] in
                handler(connection)
                connection.close()
            }
            t.start()
        }
        close(listener)
    }
}

/// One blocking TCP connection with bounded calls: the server side of `TCPTestServer`, or a
/// client (`connect`) that reads and writes from different threads at once (unlike
/// `RawClient`, whose calls are serialized).
public final class TCPTestConnection: @unchecked Sendable {
    private let fdLock = NSLock()
    private var fd: Int32

    init(fd: Int32) { self.fd = fd }

    deinit { close() }

    public static func connect(port: UInt16, receiveBuffer: Int? = nil) throws -> TCPTestConnection {
        TCPTestConnection(fd: try Socket.connect(host: "127.0.0.1", port: port, timeout: 10, receiveBuffer: receiveBuffer))
    }

    private var socket: Int32 { fdLock.withLock { fd } }

    /// Sends all of `bytes` (blocking), or throws on an error or after `timeout` seconds.
    public func write(_ bytes: [UInt8], timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var sent = 0
        try bytes.withUnsafeBytes { buf in
            while sent < buf.count {
                guard Date() < deadline else { throw AirlockTestingError(.timeout, "write: \(sent) of \(buf.count) bytes sent") }
                var p = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                let n = send(socket, buf.baseAddress! + sent, buf.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw AirlockTestingError(.closed, "write: \(String(cString: strerror(errno)))")
                }
                sent += n
            }
        }
    }

    public func write(_ text: String, timeout: Double = 30) throws { try write(Array(text.utf8), timeout: timeout) }

    /// Up to `n` bytes; [] at end of stream (or a reset); throws `.timeout` if nothing came.
    public func read(upTo n: Int, timeout: Double) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: n)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw AirlockTestingError(.timeout, "read: nothing within \(timeout) s") }
            var p = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(min(100, left * 1000 + 1))) > 0 else { continue }
            let got = recv(socket, &buf, n, 0)
            if got < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return []
            }
            return Array(buf[0..<got])
        }
    }

    /// Exactly `n` bytes (fewer only if the stream ends first).
    public func read(exactly n: Int, timeout: Double) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < n {
            let chunk = try read(upTo: min(65536, n - out.count), timeout: timeout)
            if chunk.isEmpty { break }
            out += chunk
        }
        return out
    }

    /// Everything until end of stream; throws `.timeout` if the stream does not end in time.
    public func readToEnd(timeout: Double) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var out: [UInt8] = []
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw AirlockTestingError(.timeout, "readToEnd: no end within \(timeout) s (\(out.count) bytes)") }
            let chunk = try read(upTo: 65536, timeout: left)
            if chunk.isEmpty { return out }
            out += chunk
        }
    }

    /// Reads until the bytes so far end with `marker` (e.g. the blank line of a response head).
    public func read(through marker: String, timeout: Double) throws -> [UInt8] {
        let m = Array(marker.utf8)
        var out: [UInt8] = []
        while !(out.count >= m.count && Array(out.suffix(m.count)) == m) {
            let b = try read(upTo: 1, timeout: timeout)
            if b.isEmpty { break }
            out += b
        }
        return out
    }

    /// Half-closes: the peer reads end of stream, this side can still read.
    public func shutdownWrite() { _ = shutdown(socket, Int32(SHUT_WR)) }

    public func close() {
        fdLock.withLock {
            guard fd >= 0 else { return }
            Glibc.close(fd)
            fd = -1
        }
    }
}
