@testable import AirlockIO
import CLibevent   // socket constants (SOCK_STREAM, SOCK_DGRAM, SOCK_NONBLOCK) come with its socket headers
import Glibc
import XCTest

/// `SocketAddress` keeps an IPv4 or IPv6 address in a `sockaddr_in6`'s 28 bytes (not a
/// `sockaddr_storage`'s 128): what it hands the kernel, and what it takes from it, must be
/// exactly the family's `sockaddr`.
final class SocketAddressTests: XCTestCase {
    func testFitsInThirtyTwoBytes() {
        XCTAssertLessThanOrEqual(MemoryLayout<SocketAddress>.size, 32)
        XCTAssertLessThanOrEqual(MemoryLayout<SocketAddress?>.size, 32)
    }

    func testLiteralsKeepFamilyPortHostAndLength() throws {
        let v4 = try XCTUnwrap(SocketAddress(ipLiteral: "10.1.2.3", port: 8080))
        XCTAssertEqual(v4.family, AF_INET)
        XCTAssertEqual(v4.port, 8080)
        XCTAssertEqual(v4.host, "10.1.2.3")
        XCTAssertEqual(v4.addressBytes, [10, 1, 2, 3])
        XCTAssertEqual(Int(v4.length), MemoryLayout<sockaddr_in>.size)
        XCTAssertEqual(v4.description, "10.1.2.3:8080")

        let v6 = try XCTUnwrap(SocketAddress(ipLiteral: "[2001:db8::17]", port: 443))
        XCTAssertEqual(v6.family, AF_INET6)
        XCTAssertEqual(v6.port, 443)
        XCTAssertEqual(v6.host, "2001:db8::17")
        XCTAssertEqual(v6.addressBytes, [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x17])
        XCTAssertEqual(Int(v6.length), MemoryLayout<sockaddr_in6>.size)
        XCTAssertEqual(v6.description, "[2001:db8::17]:443")

        var moved = v4
        moved.port = 65_535
        XCTAssertEqual(moved.description, "10.1.2.3:65535")
        XCTAssertNotEqual(moved, v4)
        XCTAssertNil(SocketAddress(ipLiteral: "example.com", port: 80))
    }

    /// From the kernel's `sockaddr`: IPv6 with its scope and flow label intact, byte for byte
    /// back out; IPv4 in 16 bytes; anything else (a Unix socket, a length short of the family's) refused.
    func testSockaddrRoundTripsExactly() throws {
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = UInt16(8443).bigEndian
        sin6.sin6_flowinfo = UInt32(0x12345).bigEndian
        sin6.sin6_scope_id = 3
        XCTAssertEqual(inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr), 1)
        let v6 = try XCTUnwrap(Self.address(&sin6, length: MemoryLayout<sockaddr_in6>.size))
        XCTAssertEqual(v6.description, "[fe80::1]:8443")
        v6.withSockaddr { p, length in
            XCTAssertEqual(Int(length), MemoryLayout<sockaddr_in6>.size)
            XCTAssertEqual(Array(UnsafeRawBufferPointer(start: p, count: Int(length))),
                           withUnsafeBytes(of: &sin6) { Array($0) })
        }
        XCTAssertNil(Self.address(&sin6, length: MemoryLayout<sockaddr_in>.size), "too short for IPv6")

        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = UInt16(80).bigEndian
        sin.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let v4 = try XCTUnwrap(Self.address(&sin, length: MemoryLayout<sockaddr_in>.size))
        XCTAssertEqual(v4.description, "127.0.0.1:80")
        XCTAssertTrue(v4.isLoopback)
        v4.withSockaddr { p, length in
            XCTAssertEqual(Int(length), MemoryLayout<sockaddr_in>.size)
            XCTAssertEqual(Array(UnsafeRawBufferPointer(start: p, count: Int(length))),
                           withUnsafeBytes(of: &sin) { Array($0) })
        }

        var sun = sockaddr_un()
        sun.sun_family = sa_family_t(AF_UNIX)
        XCTAssertNil(Self.address(&sun, length: MemoryLayout<sockaddr_un>.size))
    }

    /// Through the kernel: a listener's bound address (getsockname) and a connected client's
    /// (accept), IPv4 and IPv6, on real sockets.
    func testListenerAddressesThroughTheKernel() throws {
        for host in ["127.0.0.1", "::1"] {
            let loop = EventLoop(name: "socket-address")
            let listener: Listener
            do {
                listener = try Listener(loop: loop, host: host, port: 0)
            } catch where host == "::1" {
                throw XCTSkip("no IPv6 loopback here: \(error)")
            }
            XCTAssertEqual(listener.address.host, host)
            XCTAssertNotEqual(listener.address.port, 0)
            let client = socket(listener.address.family, Int32(SOCK_STREAM.rawValue), 0)
            XCTAssertGreaterThanOrEqual(client, 0)
            defer { close(client) }
            XCTAssertEqual(listener.address.withSockaddr { connect(client, $0, $1) }, 0, String(cString: strerror(errno)))
            var st = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &st) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client, $0, &len) } }
            let clientAddress = try XCTUnwrap(withUnsafePointer(to: &st) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: Int(len)) }
            })
            var peers: [SocketAddress] = []
            listener.onAccept = { fd, peer in
                peers.append(peer)
                close(fd)
            }
            listener.closeAfterAcceptingPending()
            XCTAssertEqual(peers, [clientAddress], host)
            XCTAssertEqual(peers.first?.host, host)
        }
    }

    private static func address<T>(_ sa: inout T, length: Int) -> SocketAddress? {
        withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) } }
    }
}
