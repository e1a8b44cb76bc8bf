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

    /// Issue #18 (2.6): an origin that answers before reading the body, and a chunk that breaks
    /// the grammar 50 ms after the head. The client already has the origin's 200, but its
    /// request was malformed: the exchange is logged as a client error (`bad-chunk`, state
    /// `failed`), and the upstream connection that saw part of a broken body is closed, never
    /// pooled: the next request opens a new one.
    func testBadChunkAfterTheOriginAnsweredIsLoggedAndTheUpstreamIsNotReused() throws {
        let o = try TCPTestServer { c in
            // Answers each head at once, without reading any body (whatever follows a head is
            // read as part of the next one).
            while let head = try? c.read(through: "\r\n\r\n", timeout: 10), !head.isEmpty {
                try? c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1))
        defer { a.stop() }

        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send(post("3\r\nabc\r\n"))
        let r = try c.readResponse(timeout: 10)
        XCTAssertEqual(r.status, 200, "the origin answered before the body")
        usleep(50_000)
        try? c.send("zz\r\n")   // not a chunk size
        _ = try? c.readUntilClose(timeout: 5)

        let id = try XCTUnwrap(r.header("X-Request-ID"), "the response carries its request id")
        let access = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "request.access" && $0["request_id"] as? String == id
        })
        XCTAssertEqual(access["state"] as? String, "failed", "\(access)")
        XCTAssertEqual((access["bytes_in"] as? NSNumber)?.intValue, 3)
        let error = try XCTUnwrap(a.waitForLog(timeout: 5) {
            $0["event"] as? String == "request.error" && $0["request_id"] as? String == id
        }, "the malformed body is recorded as the request's error")
        XCTAssertEqual(error["error"] as? String, "bad-chunk")
        XCTAssertEqual(error["source"] as? String, "client")

        // The next request (its own client) gets a new upstream connection.
        let next = try RawClient(port: a.port)
        defer { next.close() }
        try next.send("GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(try next.readResponse(timeout: 10).status, 200)
        XCTAssertEqual(o.acceptedCount, 2, "the upstream connection of the broken body was reused")
    }

    /// The origin answers early and its body is still being relayed when the client's body
    /// breaks: the client has a relayed head, so no error answer may follow it (that would be
    /// a second response inside the first one's body). Its response is cut: what came of the
    /// body, then the close, never Airlock's JSON; the error record names the bad chunk.
    func testBadChunkWhileTheEarlyResponseIsRelayedCutsItWithoutAnAnswerBehindIt() throws {
        let o = try TCPTestServer { c in
            guard let head = try? c.read(through: "\r\n\r\n", timeout: 10), !head.isEmpty else { return }
            try? c.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "b", count: 1000))
            _ = try? c.readToEnd(timeout: 10)   // the rest of the body never comes
        }
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1))
        defer { a.stop() }
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send(post("3\r\nabc\r\n"))
        var got: [UInt8] = []
        let deadline = Date().addingTimeInterval(10)
        while String(decoding: got, as: UTF8.self).components(separatedBy: "\r\n\r\n").last?.count ?? 0 < 1000,
              Date() < deadline {
            got += (try? c.read(upTo: 65536, timeout: 1)) ?? []
        }
        XCTAssertTrue(String(decoding: got, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "the relayed head")
        try? c.send("zz\r\n")   // not a chunk size
        got += (try? c.readUntilClose(timeout: 5)) ?? []
        let text = String(decoding: got, as: UTF8.self)
        XCTAssertEqual(text.components(separatedBy: "HTTP/1.1 ").count, 2, "one response head only: \(text.suffix(300))")
        XCTAssertFalse(text.contains("\"error\""), "no JSON answer behind the relayed head")
        XCTAssertTrue(text.hasSuffix(String(repeating: "b", count: 1000)), "what came of the body, then the cut")
        let error = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "request.error" })
        XCTAssertEqual(error["error"] as? String, "bad-chunk")
        XCTAssertEqual(error["source"] as? String, "client")
    }

    /// The same early answer with a body that ends well 50 ms later, a client that stops
    /// sending and closes, or one that stops sending and waits (its connection closed after
    /// `header_timeout`, 2 s here): completed, every body byte counted, the response untouched.
    func testAGoodBodyAfterTheOriginAnsweredIsCompleted() throws {
        let o = try TCPTestServer { c in
            while let head = try? c.read(through: "\r\n\r\n", timeout: 10), !head.isEmpty {
                try? c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        defer { o.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, workers: 1))
        defer { a.stop() }
        for (rest, bytesIn, closes) in [("2\r\nde\r\n0\r\n\r\n", 5, false), ("2\r\nde", 5, true), ("", 3, false)] {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send(post("3\r\nabc\r\n"))
            let r = try c.readResponse(timeout: 10)
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.bodyString, "ok")
            usleep(50_000)
            if !rest.isEmpty { try c.send(rest) }
            if closes { c.shutdownWrite() }
            XCTAssertTrue(c.isClosedByPeer(timeout: 5), "the response said close")
            let id = try XCTUnwrap(r.header("X-Request-ID"))
            let access = try XCTUnwrap(a.waitForLog(timeout: 5) {
                $0["event"] as? String == "request.access" && $0["request_id"] as? String == id
            })
            XCTAssertEqual(access["state"] as? String, "completed", "\(access)")
            XCTAssertEqual((access["bytes_in"] as? NSNumber)?.intValue, bytesIn, "\(access)")
            XCTAssertNil(a.logRecords().first { $0["event"] as? String == "request.error" && $0["request_id"] as? String == id })
        }
    }
}
