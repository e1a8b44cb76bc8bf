import Glibc

/// A port on 127.0.0.1 with nothing listening (bind to :0, read the port, close) — for "upstream refused" tests.
/// Another process could take the port afterwards; on a test machine that is rare enough to accept.
public func unusedLoopbackPort() -> UInt16 {
    guard let fds = try? Descriptors.make("socket", {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        return fd >= 0 ? [fd] : nil
    }) else { return 9 }  // discard port: nothing listens there on a test machine
    let fd = fds[0]
    defer { close(fd) }
    var address = Socket.loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { return 9 }
    return Socket.localPort(fd)
}
