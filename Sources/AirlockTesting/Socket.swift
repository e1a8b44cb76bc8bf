import Glibc

/// The POSIX socket calls this library makes. Every wait is a `poll` bounded by a deadline, a waker, or both;
/// every read and write is non-blocking per call (`MSG_DONTWAIT`) so a waker can always interrupt it.
/// Writes use `MSG_NOSIGNAL`: a peer that went away is an `EPIPE` error, never a process-wide SIGPIPE.
enum Socket {
    enum Readiness { case ready, timedOut, woken }

    // MARK: Listening and connecting

    /// A TCP listener on 127.0.0.1:0 (or `port`, to come back on a port used before), non-blocking
    /// so `accept` after `poll` can never hang. The default backlog (the kernel caps it at
    /// `net.core.somaxconn`) takes a burst of thousands of connects: with a short queue the
    /// overflow's SYNs are dropped and retried after 1 s and 3 s, which a test's 2 s connect
    /// timeout reads as an unreachable origin.
    static func listenOnLoopback(backlog: Int32 = 4096, port: UInt16 = 0) throws -> (fd: Int32, port: UInt16) {
        let fd = try Descriptors.make("socket") {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            return fd >= 0 ? [fd] : nil
        }[0]
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = Descriptors.systemError("bind 127.0.0.1:\(port)")
            close(fd)
            throw error
        }
        guard listen(fd, backlog) == 0 else {
            let error = Descriptors.systemError("listen")
            close(fd)
            throw error
        }
        Descriptors.setNonBlocking(fd, true)
        return (fd, localPort(fd))
    }

    /// Waits for and accepts one connection. Returns nil when the waker fired.
    static func accept(_ listener: Int32, waker: Waker) throws -> Int32? {
        while true {
            switch try wait(listener, for: Int16(POLLIN), waker: waker, deadline: nil) {
            case .woken: return nil
            case .timedOut, .ready: break
            }
            do {
                let fd = try Descriptors.make("accept") {
                    let fd = Glibc.accept(listener, nil, nil)
                    return fd >= 0 ? [fd] : nil
                }[0]
                Descriptors.setNonBlocking(fd, false)
                setNoDelay(fd)
                return fd
            } catch let error as AirlockTestingError {
                switch error.kind {
                case .system(errno: EAGAIN), .system(errno: EINTR), .system(errno: ECONNABORTED), .system(errno: EPROTO):
                    continue
                default:
                    throw error
                }
            }
        }
    }

    /// Connects a TCP socket to `host:port` (a dotted IPv4 address, or a name resolved with getaddrinfo).
    static func connect(host: String, port: UInt16, timeout: Double, receiveBuffer: Int? = nil) throws -> Int32 {
        var address = try resolveIPv4(host: host, port: port)
        let fd = try Descriptors.make("socket") {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            return fd >= 0 ? [fd] : nil
        }[0]
        if let receiveBuffer { setReceiveBuffer(fd, bytes: receiveBuffer) }
        Descriptors.setNonBlocking(fd, true)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EINTR else {
                close(fd)
                throw Descriptors.systemError("connect \(host):\(port)", code)
            }
            let readiness: Readiness
            do {
                readiness = try wait(fd, for: Int16(POLLOUT), waker: nil, deadline: Deadline(seconds: timeout))
            } catch {
                close(fd)
                throw error
            }
            guard readiness == .ready else {
                close(fd)
                throw AirlockTestingError(.timeout, "connect \(host):\(port) did not finish within \(timeout) s")
            }
            var soError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
            guard soError == 0 else {
                close(fd)
                throw Descriptors.systemError("connect \(host):\(port)", soError)
            }
        }
        Descriptors.setNonBlocking(fd, false)
        setNoDelay(fd)
        return fd
    }

    static func localPort(_ fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    static func setReceiveBuffer(_ fd: Int32, bytes: Int) {
        var size = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: Waiting, reading, writing

    /// Polls `fd` for `events`, also watching the waker; retries on EINTR with the remaining time.
    /// With neither a deadline nor a waker this would wait forever, so callers always pass one.
    static func wait(_ fd: Int32, for events: Int16, waker: Waker?, deadline: Deadline?) throws -> Readiness {
        var fds = [pollfd(fd: fd, events: events, revents: 0)]
        if let waker { fds.append(pollfd(fd: waker.readFD, events: Int16(POLLIN), revents: 0)) }
        while true {
            let timeout = deadline?.remainingMilliseconds ?? -1
            let rc = poll(&fds, nfds_t(fds.count), timeout)
            if rc < 0 {
                if errno == EINTR { continue }
                throw Descriptors.systemError("poll")
            }
            if fds.count > 1, fds[1].revents != 0 { return .woken }
            if rc > 0, fds[0].revents != 0 { return .ready }
            if let deadline, deadline.hasPassed { return .timedOut }
        }
    }

    enum ReadOutcome { case bytes(Int), endOfStream, reset }

    /// One `recv` into `scratch` (at most `maximum` bytes), after waiting for readability.
    static func receive(_ fd: Int32, into scratch: UnsafeMutableRawBufferPointer, maximum: Int,
                        waker: Waker?, deadline: Deadline?) throws -> ReadOutcome {
        let limit = max(1, min(maximum, scratch.count))
        while true {
            switch try wait(fd, for: Int16(POLLIN), waker: waker, deadline: deadline) {
            case .woken: throw AirlockTestingError(.stopped, "stopped while reading")
            case .timedOut: throw AirlockTestingError(.timeout, "no bytes arrived before the deadline")
            case .ready: break
            }
            let n = recv(fd, scratch.baseAddress!, limit, Int32(MSG_DONTWAIT))
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            let code = errno
            switch code {
            case EINTR, EAGAIN: continue
            case ECONNRESET: return .reset
            default: throw Descriptors.systemError("recv", code)
            }
        }
    }

    /// Writes all of `bytes`, waiting for writability between partial writes.
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, waker: Waker?, deadline: Deadline?) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if n > 0 {
                offset += n
                continue
            }
            let code = errno
            guard n < 0, code == EAGAIN || code == EINTR else {
                throw Descriptors.systemError("send", code)
            }
            if code == EINTR { continue }
            switch try wait(fd, for: Int16(POLLOUT), waker: waker, deadline: deadline) {
            case .woken: throw AirlockTestingError(.stopped, "stopped while writing")
            case .timedOut:
                throw AirlockTestingError(.timeout, "peer did not accept \(bytes.count - offset) more bytes before the deadline")
            case .ready: continue
            }
        }
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8], waker: Waker?, deadline: Deadline?) throws {
        try bytes.withUnsafeBytes { try sendAll(fd, $0, waker: waker, deadline: deadline) }
    }

    /// Half-closes, then reads and drops whatever the peer still sends (bounded), then closes. Closing with
    /// unread bytes in the receive buffer would send RST and could destroy the response the peer has not read.
    static func lingeringClose(_ fd: Int32, waker: Waker?, linger: Double = 2) {
        _ = shutdown(fd, Int32(SHUT_WR))
        let deadline = Deadline(seconds: linger)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { scratch.deallocate() }
        while true {
            guard let outcome = try? receive(fd, into: scratch, maximum: scratch.count, waker: waker, deadline: deadline),
                  case .bytes = outcome else { break }
        }
        close(fd)
    }

    // MARK: Addresses

    static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    static func resolveIPv4(host: String, port: UInt16) throws -> sockaddr_in {
        var address = loopbackAddress(port: port)
        if inet_pton(AF_INET, host, &address.sin_addr) == 1 { return address }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &result)
        defer { if let result { freeaddrinfo(result) } }
        guard rc == 0, let first = result, let sa = first.pointee.ai_addr else {
            throw AirlockTestingError(.system(errno: 0), "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address.sin_addr = $0.pointee.sin_addr }
        return address
    }
}
