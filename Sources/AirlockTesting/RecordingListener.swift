import Foundation
import Glibc

/// A TCP listener on 127.0.0.1 that accepts connections and records every byte each one sends
/// until it closes, answering nothing: an upstream for tests that must see exactly which bytes
/// arrived (a body cut short, a delimiter held back), which a parsing origin would not report.
public final class RecordingListener: @unchecked Sendable {
    public let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var received: [[UInt8]] = []
    private var stopped = false

    public init() throws {
        (listener, port) = try Socket.listenOnLoopback(backlog: 16)
        let t = Thread { [self] in run() }
        t.start()
    }

    /// The bytes of every connection so far, in accept order (a connection still open: so far).
    public var connections: [[UInt8]] { lock.withLock { received } }

    public func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run() {
        while !isStopped {
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { continue }
            let index = lock.withLock { received.append([]); return received.count - 1 }
            let t = Thread { [self] in
                var buf = [UInt8](repeating: 0, count: 65536)
                while true {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    if poll(&p, 1, 100) == 0 { if isStopped { break } else { continue } }
                    let n = read(fd, &buf, buf.count)
                    if n <= 0 { break }
                    lock.withLock { received[index].append(contentsOf: buf[0..<n]) }
                }
                close(fd)
            }
            t.start()
        }
        close(listener)
    }
}
