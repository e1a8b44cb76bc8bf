@testable import AirlockIO
import CLibevent   // socket constants (SOCK_STREAM, SOCK_DGRAM, SOCK_NONBLOCK) come with its socket headers
import Glibc
import XCTest

/// `Resolver` against a real nameserver on 127.0.0.1: a UDP socket this test answers itself, so
/// evdns sends real queries and reads real replies (nothing leaves loopback).
final class ResolverTests: XCTestCase {
    /// A nameserver on 127.0.0.1:<ephemeral> that answers every query with `rcode` and no answers.
    private final class StubNameserver {
        let fd: Int32
        let port: UInt16
        private(set) var queries = 0
        let rcode: UInt8

        init(rcode: UInt8) throws {
            self.rcode = rcode
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(.EMFILE) }
            self.fd = fd
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    bind(fd, sa, length) == 0 && getsockname(fd, sa, &length) == 0
                }
            }
            guard bound else { close(fd); throw POSIXError(.EADDRINUSE) }
            port = UInt16(bigEndian: addr.sin_port)
        }

        deinit { close(fd) }

        /// Answers every query waiting on the socket: the query's id and question, QR and RA set, `rcode`.
        func answerPending() {
            var buffer = [UInt8](repeating: 0, count: 1500)
            var from = sockaddr_storage()
            while true {
                var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let n = withUnsafeMutablePointer(to: &from) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &fromLength) }
                }
                guard n >= 12 else { return }
                queries += 1
                let query = Array(buffer[..<n])
                var end = 12
                while end < query.count && query[end] != 0 { end += Int(query[end]) + 1 }
                end = min(end + 5, query.count)   // the root label, QTYPE, QCLASS
                var reply = Array(query[0..<2]) + [0x80 | (query[2] & 0x01), 0x80 | rcode, 0, 1, 0, 0, 0, 0, 0, 0]
                reply += query[12..<end]
                _ = withUnsafePointer(to: &from) { p in
                    p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, fromLength) }
                }
            }
        }
    }

    /// Resolves `host` through `nameserver`, answering its queries, for up to 10 s.
    private func resolve(_ host: String, with nameserver: StubNameserver) throws -> Result<[SocketAddress], IOError> {
        let loop = EventLoop(name: "test")
        let resolver = Resolver(loop: loop, nameservers: ["127.0.0.1:\(nameserver.port)"])
        var result: Result<[SocketAddress], IOError>?
        resolver.resolve(host: host, port: 443) { result = $0 }
        let deadline = EventLoop.nowNanos() + 10_000_000_000
        while result == nil && EventLoop.nowNanos() < deadline {
            _ = loop.runOnce(blocking: false)
            nameserver.answerPending()
            usleep(1000)
        }
        return try XCTUnwrap(result, "no answer within 10 s (\(nameserver.queries) queries)")
    }

    /// A name the nameserver says does not exist (NXDOMAIN): the error reads as glibc's resolver
    /// says it, not as libevent's BSD text ("nodename nor servname provided, or not known").
    func testANameThatDoesNotExistIsReportedInTheSystemResolversWords() throws {
        let ns = try StubNameserver(rcode: 3)
        guard case .failure(let error) = try resolve("no-such-host.test", with: ns) else {
            return XCTFail("resolved a name the nameserver said does not exist")
        }
        XCTAssertGreaterThan(ns.queries, 0, "the query reached the nameserver")
        XCTAssertEqual(error.code, .resolve)
        XCTAssertEqual(error.detail, "no-such-host.test: " + String(cString: gai_strerror(EAI_NONAME)))
        XCTAssertFalse(error.detail.contains("nodename nor servname"), error.detail)
    }

    /// A nameserver that fails (SERVFAIL): glibc's words for a failure that may pass.
    func testAFailingNameserverIsReportedInTheSystemResolversWords() throws {
        let ns = try StubNameserver(rcode: 2)
        guard case .failure(let error) = try resolve("flaky.test", with: ns) else {
            return XCTFail("resolved a name the nameserver failed")
        }
        XCTAssertGreaterThan(ns.queries, 0)
        let glibc = [EAI_AGAIN, EAI_FAIL].map { "flaky.test: " + String(cString: gai_strerror($0)) }
        XCTAssertTrue(glibc.contains(error.detail), error.detail)
    }
}
