import AirlockTesting
import Foundation
import XCTest

/// `limits.upstream_timeout` while a request body is still going up: the upstream owes no answer
/// before it has the whole request, so its silence is not a timeout while the body moves (as
/// nginx's proxy_read_timeout, which starts once the request is sent). A client that stops
/// sending its body mid-way still ends in 504 within a bounded time.
final class UploadTimeoutTests: GatewayTestCase {
    /// An origin that reads a head and its Content-Length body, then answers 200 with the body's length.
    private func origin() throws -> TCPTestServer {
        let s = try TCPTestServer { c in
            guard let head = try? c.read(through: "\r\n\r\n", timeout: 30) else { return }
            let text = String(decoding: head, as: UTF8.self).lowercased()
            let length = text.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
            guard let body = try? c.read(exactly: length, timeout: 30), body.count == length else { return }
            let answer = "got \(body.count)"
            try? c.write("HTTP/1.1 200 OK\r\nContent-Length: \(answer.utf8.count)\r\nConnection: close\r\n\r\n\(answer)")
        }
        servers.append(s)
        return s
    }

    private func gateway(_ o: TCPTestServer) throws -> AirlockProcess {
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["upstream_timeout": "1s"], workers: 1))
        airlocks.append(a)
        return a
    }

    /// 40 KiB sent over about 2.5 s, with upstream_timeout 1 s: answered, not cut.
    func testASlowUploadLongerThanTheUpstreamTimeoutIsAnswered() throws {
        let a = try gateway(try origin())
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        let chunk = patternBytes(count: 4096)
        try c.write("POST /upload HTTP/1.1\r\nHost: gw.test\r\nConnection: close\r\nContent-Length: \(10 * chunk.count)\r\n\r\n")
        for _ in 0..<10 {
            try c.write(chunk)
            usleep(250_000)
        }
        let response = String(decoding: try c.readToEnd(timeout: 10), as: UTF8.self)
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 "), response)
        XCTAssertTrue(response.hasSuffix("got 40960"), response)
    }

    /// Half the body, then nothing: 504 upstream-timeout after a bounded wait (two ticks of the
    /// timeout: one that sees the body had moved, one that sees it stopped).
    func testAnUploadThatStopsStillTimesOut() throws {
        let a = try gateway(try origin())
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        try c.write("POST /upload HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 8192\r\n\r\n")
        try c.write(patternBytes(count: 4096))
        let started = Date()
        let response = String(decoding: try c.readToEnd(timeout: 10), as: UTF8.self)
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 504 "), response)
        XCTAssertTrue(response.contains("\"error\":\"upstream-timeout\""), response)
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
    }
}
