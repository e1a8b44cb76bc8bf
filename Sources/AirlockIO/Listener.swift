import CLibevent
import Glibc

/// A bound, listening TCP socket driven by one loop. Accepted sockets are handed to
/// `onAccept` (non-blocking, TCP_NODELAY set); the receiver decides which worker owns them.
public final class Listener {
    public let address: SocketAddress
    private var listener: OpaquePointer?
    /// The listener must be freed before its base: it keeps its loop alive.
    private let loop: EventLoop
    /// Receives each accepted socket; until set, accepted sockets are closed.
    public var onAccept: ((Int32, SocketAddress) -> Void)?
    /// Told (with `errno`) when `accept` fails for want of a resource (descriptors, memory):
    /// accepting then pauses for `acceptRetryDelay` instead of spinning on a listening socket
    /// that stays readable, as nginx and HAProxy do.
    public var onAcceptError: ((Int32) -> Void)?
    public static let acceptRetryDelay: Duration = .milliseconds(100)
    private var resumeTimer: Timer?

    /// The accept queue asked for by default: more than any kernel allows, so the kernel's
    /// own cap (`net.core.somaxconn`, 4096 by default since Linux 5.4) is what holds. A burst
    /// of connects that outruns the acceptor waits in the queue; beyond the queue the kernel
    /// drops the SYN and the client retries it after 1 s, then 3 s (nginx's 511 and a fixed
    /// 1024 both cost clients those seconds in a burst a proxy should absorb).
    public static let systemMaximumBacklog: Int32 = 65535

    /// Binds `host:port` (an IP literal or "localhost"; port 0 picks a free one).
    public init(loop: EventLoop, host: String, port: UInt16, backlog: Int32 = Listener.systemMaximumBacklog) throws {
        IORuntime.setUp()
        self.loop = loop
        let literal = host == "localhost" ? "127.0.0.1" : host
        guard let addr = SocketAddress(ipLiteral: literal, port: port) else {
            throw IOError(.bind, "listen address must be an IP literal or localhost: \(host)")
        }
        let fd = socket(addr.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw IOError.errno(.socket, "socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = addr.withSockaddr { bind(fd, $0, $1) }
        guard rc == 0 else {
            let e = IOError.errno(.bind, "bind \(addr)")
            Glibc.close(fd)
            throw e
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let e = IOError.errno(.listen, "listen \(addr)")
            Glibc.close(fd)
            throw e
        }
        evutil_make_socket_nonblocking(fd)
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &len) }
        }
        address = withUnsafePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: Int(len)) }
        } ?? addr
        // Backlog 0: the socket already listens. (-1 would make libevent call listen(fd, 128)
        // again, shortening the queue asked for above.)
        listener = evconnlistener_new(loop.base, listenerCallback, nil,
                                      UInt32(LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC), 0, fd)
        guard listener != nil else {
            Glibc.close(fd)
            throw IOError.errno(.listen, "evconnlistener")
        }
        evconnlistener_set_cb(listener, listenerCallback, Unmanaged.passUnretained(self).toOpaque())
        evconnlistener_set_error_cb(listener, listenerErrorCallback)
    }

    deinit { close() }

    /// For a graceful stop: hands every connection already waiting in the accept queue to
    /// `onAccept` (at most `limit`), then closes. Closing alone would make the kernel reset
    /// them, and a client that had already sent its request would get no answer.
    public func closeAfterAcceptingPending(limit: Int = Int(Listener.systemMaximumBacklog) + 1) {
        if let l = listener {
            let fd = evconnlistener_get_fd(l)
            for _ in 0..<limit {
                var st = sockaddr_storage()
                var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let c = withUnsafeMutablePointer(to: &st) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.accept(fd, $0, &len)
                    }
                }
                guard c >= 0 else { break }   // EAGAIN: the queue is empty (or accepting failed)
                evutil_make_socket_nonblocking(c)
                evutil_make_socket_closeonexec(c)
                withUnsafeMutablePointer(to: &st) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { accepted(c, $0, Int32(len)) }
                }
            }
        }
        close()
    }

    /// Stops accepting and closes the socket (idempotent).
    public func close() {
        resumeTimer?.cancel()
        resumeTimer = nil
        if let l = listener { evconnlistener_free(l); listener = nil }
    }

    fileprivate func acceptFailed(_ err: Int32) {
        guard let l = listener else { return }
        evconnlistener_disable(l)
        if resumeTimer == nil {
            resumeTimer = Timer(loop: loop) { [unowned self] in
                if let l = self.listener { evconnlistener_enable(l) }
            }
        }
        resumeTimer?.schedule(after: Self.acceptRetryDelay)
        onAcceptError?(err)
    }

    fileprivate func accepted(_ fd: Int32, _ sa: UnsafeMutablePointer<sockaddr>?, _ len: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let peer = sa.flatMap { SocketAddress(UnsafePointer($0), length: Int(len)) } ?? address
        guard let onAccept else { Glibc.close(fd); return }
        onAccept(fd, peer)
    }
}

private let listenerCallback: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<sockaddr>?, Int32, UnsafeMutableRawPointer?) -> Void = { _, fd, sa, len, ctx in
    guard let ctx else { Glibc.close(fd); return }
    let l = Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue()
    withExtendedLifetime(l) { l.accepted(fd, sa, len) }
}

/// libevent calls this after an accept error it does not retry by itself (EMFILE, ENFILE,
/// ENOBUFS, ENOMEM...); errno still holds the error.
private let listenerErrorCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, ctx in
    let err = errno
    guard let ctx else { return }
    let l = Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue()
    withExtendedLifetime(l) { l.acceptFailed(err) }
}
