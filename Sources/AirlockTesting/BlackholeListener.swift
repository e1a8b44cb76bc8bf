import Glibc

/// A port on 127.0.0.1 where a TCP connect hangs: a listener with `listen(fd, 0)` that never accepts, its
/// accept queue filled by connections this object holds. Linux drops a SYN to a listener whose accept queue
/// is full, so a new connect gets no answer at all (no RST, no SYN-ACK) until it gives up: an unreachable
/// upstream without leaving loopback, for connect-timeout tests.
public final class BlackholeListener: @unchecked Sendable {
    public let port: UInt16
    private var listener: Int32
    private var fillers: [Int32] = []

    /// Binds, listens with backlog 0 and connects (without accepting) until a probe connect times out
    /// after `probeTimeout` s, at most 8 fillers. Throws if the queue never fills.
    public init(probeTimeout: Double = 0.5) throws {
        let (fd, port) = try Socket.listenOnLoopback(backlog: 0)
        listener = fd
        self.port = port
        do {
            for _ in 0..<8 {
                do {
                    fillers.append(try Socket.connect(host: "127.0.0.1", port: port, timeout: probeTimeout))
                } catch let error as AirlockTestingError where error.kind == .timeout {
                    return   // this SYN was dropped: the queue is full
                }
            }
            throw AirlockTestingError(.process, "the accept queue of a listen(0) socket never filled (8 connects completed)")
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Makes room for exactly one connect: the oldest filler is accepted and closed (both ends),
    /// so the next SYN to arrive completes. SYNs dropped earlier are retried by their senders
    /// only after 1 s, then 3 s: the one expected next must come well before that.
    public func openOneSlot() throws {
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw Descriptors.systemError("accept a filler") }
        Glibc.close(fd)
        if !fillers.isEmpty { Glibc.close(fillers.removeFirst()) }
    }

    /// Waits up to `timeout` s for the connection that took the slot `openOneSlot` made, fills
    /// the queue again at once (so that no other hung connect gets in), then reads one request
    /// head on it and answers it `200` with `body` and `Connection: close`. False when no
    /// connection came.
    public func serveOneQueued(body: String, timeout: Double) throws -> Bool {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) > 0 else { return false }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw Descriptors.systemError("accept") }
        let connection = TCPTestConnection(fd: fd)
        defer { connection.close() }
        fillers.append(try Socket.connect(host: "127.0.0.1", port: port, timeout: 1))
        let head = try connection.read(through: "\r\n\r\n", timeout: 5)
        guard head.suffix(4).elementsEqual("\r\n\r\n".utf8) else {
            throw AirlockTestingError(.closed, "the connection ended before a request head")
        }
        try connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)", timeout: 5)
        return true
    }

    /// Closes the fillers and the listener. Idempotent.
    public func close() {
        for fd in fillers { Glibc.close(fd) }
        fillers = []
        if listener >= 0 { Glibc.close(listener) }
        listener = -1
    }
}
