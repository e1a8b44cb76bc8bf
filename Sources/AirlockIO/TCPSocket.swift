import CLibevent
import Glibc

/// The socket calls of an outgoing TCP connection, apart from the stream that then owns
/// the descriptor: a non-blocking connect and, once the socket is writable, its outcome.
enum TCPSocket {
    /// A non-blocking, close-on-exec socket with TCP_NODELAY, connecting to `address`.
    /// `immediate` is true when the connect already finished, `error` the errno of an
    /// immediate failure (0 otherwise): both are reported from the loop, never here.
    static func connect(to address: SocketAddress) throws -> (fd: Int32, immediate: Bool, error: Int32) {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw IOError.errno(.socket, "socket") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        let error = rc != 0 && errno != EINPROGRESS ? errno : 0
        return (fd, rc == 0, error)
    }

    /// The outcome of a non-blocking connect once the socket is writable (SO_ERROR).
    static func connectError(_ fd: Int32) -> Int32 {
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
        return err
    }
}
