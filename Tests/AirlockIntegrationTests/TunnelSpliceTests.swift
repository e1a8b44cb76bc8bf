import AirlockTesting
import Foundation
import XCTest

/// CONNECT tunnels over splice(2) (`limits.splice`): both directions move socket to socket,
/// 50 MiB each way with equal SHA-256, the access record's bytes each way exact, half-close
/// passed on (the echo's EOF follows the client's), and `airlock_spliced_bytes_total` shows it.
final class TunnelSpliceTests: GatewayTestCase {
    private func gateway(port: UInt16, limits: [String: String] = [:]) throws -> (AirlockProcess, UInt16) {
        let a = try Fixture.start(Fixture.tunnelConfig(connectPort: port, limits: limits))
        airlocks.append(a)
        return (a, try Fixture.adminPort(a))
    }

    private func spliced(_ admin: UInt16) throws -> Double { try Fixture.metric("airlock_spliced_bytes_total", admin: admin) }

    func testTunnelFiftyMiBEachWayIsSplicedWithEqualChecksums() throws {
        let size = 50 * 1024 * 1024
        let echo = try TCPTestServer { c in
            while let chunk = try? c.read(upTo: 65536, timeout: 30), !chunk.isEmpty {
                if (try? c.write(chunk)) == nil { return }
            }
            c.shutdownWrite()
        }
        servers.append(echo)
        let (a, admin) = try gateway(port: echo.port)
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        try c.write("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\n")
        XCTAssertEqual(String(decoding: try c.read(through: "\r\n\r\n", timeout: 10), as: UTF8.self),
                       "HTTP/1.1 200 Connection established\r\n\r\n")
        let sent = patternBytes(count: size, offset: 11)
        let writer = Thread {
            try? c.write(sent, timeout: 120)
            c.shutdownWrite()
        }
        writer.start()
        let got = try c.readToEnd(timeout: 120)
        XCTAssertEqual(got.count, size)
        XCTAssertEqual(try sha256Hex(got), try sha256Hex(sent))
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["bytes_in"] as? Int, size)
        XCTAssertEqual(record["bytes_out"] as? Int, size)
        XCTAssertEqual(record["tunnel"] as? String, "closed")
        XCTAssertGreaterThan(try spliced(admin), Double(size), "both directions were spliced")
    }

    /// The client's EOF reaches the upstream as a half-close after its spliced bytes, and the
    /// answer the upstream sends after it comes back spliced too: every byte counted once.
    func testHalfCloseOverSplicedTunnel() throws {
        let server = try TCPTestServer { c in
            let request = (try? c.readToEnd(timeout: 10)) ?? []   // until the client's EOF
            try? c.write(Array("got \(request.count) bytes".utf8))
        }
        servers.append(server)
        let (a, admin) = try gateway(port: server.port)
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        try c.write("CONNECT 127.0.0.1:\(server.port) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n")
        XCTAssertEqual(String(decoding: try c.read(through: "\r\n\r\n", timeout: 10), as: UTF8.self),
                       "HTTP/1.1 200 Connection established\r\n\r\n")
        try c.write("question")
        c.shutdownWrite()
        XCTAssertEqual(String(decoding: try c.readToEnd(timeout: 10), as: UTF8.self), "got 8 bytes")
        let record = try XCTUnwrap(Fixture.accessRecords(a, count: 1) { $0["tunnel"] != nil }.first)
        XCTAssertEqual(record["bytes_in"] as? Int, 8)
        XCTAssertEqual(record["bytes_out"] as? Int, 11)
        XCTAssertEqual(record["tunnel"] as? String, "closed")
        XCTAssertEqual(try spliced(admin), 19, "both directions went by splice")
    }

    func testTunnelsCopyWhenSpliceIsOff() throws {
        let echo = try TCPTestServer { c in
            while let chunk = try? c.read(upTo: 65536, timeout: 10), !chunk.isEmpty {
                if (try? c.write(chunk)) == nil { return }
            }
            c.shutdownWrite()
        }
        servers.append(echo)
        let (a, admin) = try gateway(port: echo.port, limits: ["splice": "false"])
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        try c.write("CONNECT 127.0.0.1:\(echo.port) HTTP/1.1\r\nHost: 127.0.0.1:\(echo.port)\r\n\r\n")
        _ = try c.read(through: "\r\n\r\n", timeout: 10)
        let sent = patternBytes(count: 1 << 20, offset: 5)
        try c.write(sent)
        c.shutdownWrite()
        XCTAssertTrue(try c.readToEnd(timeout: 30) == sent)
        XCTAssertEqual(try spliced(admin), 0)
    }
}
