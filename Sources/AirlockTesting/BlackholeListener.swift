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

    /// Closes the fillers and the listener. Idempotent.
    public func close() {
        for fd in fillers { Glibc.close(fd) }
        fillers = []
        if listener >= 0 { Glibc.close(listener) }
        listener = -1
    }
}
