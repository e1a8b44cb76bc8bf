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
}
