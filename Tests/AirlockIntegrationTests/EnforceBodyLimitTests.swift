import AirlockTesting
import Foundation
import XCTest

/// README, `routes[].response.max_body_bytes`: "In `enforce` mode Airlock stops reading and closes that
/// upstream connection." Seen from the origin: the keep-alive connection that carried the too-large body is
/// ended by Airlock, not kept for another request.
final class EnforceBodyLimitTests: XCTestCase {
    func testBodyTooLargeClosesTheUpstreamConnection() throws {
        let json = Array(("[" + String(repeating: "1,", count: 32 * 1024) + "1]").utf8)   // 64 KiB of JSON
        let origin = try TestOrigin(.respond { req in
            req.target == "/big"
                ? TestResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(json))
                : TestResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array("[1]".utf8)))
        })
        defer { origin.stop() }
        let a = try Fixture.start("""
            listen: 127.0.0.1:0
            workers: 1
            \(Fixture.limitsYAML([:]))
            routes:
              - name: small
                match: { host: "*" }
                upstream: http://127.0.0.1:\(origin.port)
                response: { serializer: json, max_body_bytes: 1KiB, mode: enforce }
            """)
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        // A small body first: the upstream connection is keep-alive and reusable.
        XCTAssertEqual(try c.exchange("GET /small HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
        XCTAssertEqual(origin.connectionsClosedByPeer, 0)
        let r = try c.exchange("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(r.status, 502, String(decoding: r.body, as: UTF8.self))
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "rejected-response")
        XCTAssertEqual(body["reason"] as? String, "body-too-large")
        // The origin sees its connection ended by Airlock (default idle_timeout 75 s: not an idle close).
        XCTAssertTrue(origin.waitForPeerCloses(1, timeout: 10),
                      "the upstream connection that carried the too-large body was not closed")
        XCTAssertEqual(origin.acceptedConnections, 1)
        // The next request needs a new upstream connection.
        XCTAssertEqual(try c.exchange("GET /small HTTP/1.1\r\nHost: x\r\n\r\n").status, 200)
        XCTAssertEqual(origin.acceptedConnections, 2)
        XCTAssertEqual(Set(origin.requests.map(\.connectionIndex)), [0, 1])
    }
}
