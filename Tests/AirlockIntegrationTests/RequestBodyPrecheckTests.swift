import AirlockTesting
import Foundation
import XCTest

/// Issue #13: a chunked request body whose first bytes (those that came with the head) already
/// break the grammar gets its 400 before any upstream connection is opened or taken.
final class RequestBodyPrecheckTests: XCTestCase {
    /// Head and body in one write, so the body's first bytes are buffered with the head.
    private func post(_ body: String) -> String {
        "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    }

    func testBrokenChunkedBodiesAreRefusedWithNoUpstreamConnection() throws {
        let o = try TestOrigin(.raw { _ in Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8) })
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1))
        defer { a.stop() }
        let broken: [(String, String)] = [
            ("bad size line", "zz\r\nhello\r\n0\r\n\r\n"),
            ("size overflow", "fffffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
            ("bare LF", "5\nhello\r\n0\r\n\r\n"),
            ("data overrun", "5\r\nhelloXX\r\n0\r\n\r\n"),
            ("second chunk broken", "5\r\nhello\r\n-1\r\nx\r\n0\r\n\r\n"),
        ]
        for (name, body) in broken {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send(post(body))
            let r = try c.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 400, name)
            XCTAssertTrue(String(decoding: r.body, as: UTF8.self).contains("\"request_id\""), name)
        }
        XCTAssertEqual(o.acceptedConnections, 0, "no upstream connection for a body already known to be broken")

        // A good body still goes through (and opens the one connection).
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send(post("5\r\nhello\r\n0\r\n\r\n"))
        XCTAssertEqual(try c.readResponse(timeout: 10).status, 200)
        XCTAssertEqual(o.acceptedConnections, 1)
    }
}
