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
        let echo = try echoServer()
        let (a, admin) = try gateway(port: echo.port)
        _ = try echoEachWay(a, to: echo.port, size: size, offset: 11)
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
        let c = try openTunnel(a, to: server.port)
        defer { c.close() }
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
        let echo = try echoServer(readTimeout: 10)
        let (a, admin) = try gateway(port: echo.port, limits: ["splice": "false"])
        let c = try openTunnel(a, to: echo.port)
        defer { c.close() }
        let sent = patternBytes(count: 1 << 20, offset: 5)
        try c.write(sent)
        c.shutdownWrite()
        XCTAssertTrue(try c.readToEnd(timeout: 30) == sent)
        XCTAssertEqual(try spliced(admin), 0)
    }
}
