import CLibevent   // socket constants (SOCK_STREAM) come with its socket headers
import Glibc
import XCTest

/// Non-blocking Unix socket pairs for the stream tests, and reading what one end holds now.
enum LocalSocket {
    static func pair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0 else {
            throw XCTSkip("socketpair: \(String(cString: strerror(errno)))")
        }
        return (fds[0], fds[1])
    }

    /// What the socket holds now (non-blocking).
    static func readAvailable(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return out }
            out += buf[..<n]
        }
    }

    /// A connected pair on 127.0.0.1: the accepted end (the stream's side), the client end
    /// (the test reads it, blocking, with a 5 s timeout); the caller closes both.
    static func tcpPair() throws -> (Int32, Int32) {
        let l = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(l) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &addr) { p in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                guard bind(l, sa, len) == 0, listen(l, 8) == 0, getsockname(l, sa, &len) == 0 else {
                    throw POSIXError(.EADDRNOTAVAIL)
                }
            }
        }
        let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, len) }
        }
        XCTAssertEqual(rc, 0)
        let a = accept(l, nil, nil)
        XCTAssertGreaterThanOrEqual(a, 0)
        _ = fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK)
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return (a, c)
    }
}
