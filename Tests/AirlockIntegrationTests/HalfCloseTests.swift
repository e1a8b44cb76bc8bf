import AirlockTesting
import Foundation
import XCTest

/// A client that sends a whole request and then shuts down its sending side still gets its
/// answer (issue #11, item 6): the bytes that arrived with the close are decoded before the
/// close is judged. Pooling is off, so every request waits for a fresh upstream connection
/// while its body and the close sit in Airlock's buffer (the window the bug lived in).
final class HalfCloseTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?
    let iterations = 200

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    private func start() throws -> (TestOrigin, AirlockProcess) {
        let o = try TestOrigin(.respond { r in .ok("got \(r.body.count) bytes: \(String(decoding: r.body, as: UTF8.self))") })
        origin = o
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: o.port, limits: ["max_idle_per_upstream": "0"]))
        airlock = a
        return (o, a)
    }

    /// One request, then shutdown(SHUT_WR); returns the response (or a description of what came instead).
    private enum Outcome {
        case response(RawResponse)
        case none(String)   // closed, reset or timed out without a whole response
    }

    private func halfClosedExchange(_ a: AirlockProcess, _ request: String) -> Outcome {
        do {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send(request)
            c.shutdownWrite()
            return .response(try c.readResponse(timeout: 10, requestMethod: "POST"))
        } catch {
            return .none("\(error)")
        }
    }

    func testHalfClosedPostIsAnsweredEveryTime() throws {
        let (o, a) = try start()
        var failures: [String] = []
        for i in 0..<iterations {
            let req = "POST /post/\(i) HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello"
            switch halfClosedExchange(a, req) {
            case .response(let r) where r.status == 200 && String(decoding: r.body, as: UTF8.self) == "got 5 bytes: hello":
                break
            case .response(let r):
                failures.append("#\(i): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
            case .none(let why):
                failures.append("#\(i): no response (\(why))")
            }
        }
        XCTAssertEqual(failures, [], "\(failures.count) of \(iterations) half-closed POSTs not answered")
        XCTAssertTrue(o.waitForRequests(iterations, timeout: 5))
        let bodies = o.requests.filter { $0.target.hasPrefix("/post/") && $0.body == Array("hello".utf8) }
        XCTAssertEqual(bodies.count, iterations, "every body reached the origin whole")
        XCTAssertEqual(a.logRecords().filter { ($0["error"] as? String) == "client-aborted" }.count, 0)
    }

    func testHalfClosedBadChunkIsAnswered400EveryTime() throws {
        let (o, a) = try start()
        var failures: [String] = []
        for i in 0..<iterations {
            // The last-chunk line ends in a bare LF: a framing error, whether or not the client half-closes.
            let req = "POST /chunk/\(i) HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\n\r\n"
            switch halfClosedExchange(a, req) {
            case .response(let r) where r.status == 400:
                let body = Fixture.json(r.body)
                if body["error"] == nil { failures.append("#\(i): 400 without a JSON error body") }
            case .response(let r):
                failures.append("#\(i): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
            case .none(let why):
                failures.append("#\(i): no response (\(why))")
            }
        }
        XCTAssertEqual(failures, [], "\(failures.count) of \(iterations) half-closed bad chunked bodies not answered 400")
        XCTAssertFalse(o.requests.contains { $0.target.hasPrefix("/chunk/") }, "no malformed body reached the origin as a request")
    }

    /// The other side of the rule: a body still incomplete when the client closes is an abort
    /// (499 in the log), and nothing is answered to a client that cannot have sent it all.
    func testHalfCloseInsideTheBodyIsAnAbort() throws {
        let (o, a) = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("POST /cut HTTP/1.1\r\nHost: api.test\r\nContent-Length: 10\r\n\r\nhello")
        c.shutdownWrite()
        XCTAssertTrue(c.isClosedByPeer(timeout: 10))
        let answer = try c.readUntilClose(timeout: 1)   // what arrived before the close
        XCTAssertTrue(answer.isEmpty, "nothing is answered before the close, got: \(String(decoding: answer, as: UTF8.self))")
        let rec = a.waitForLog(timeout: 5) { ($0["error"] as? String) == "client-aborted" }
        XCTAssertNotNil(rec, "the cut-off body is logged as client-aborted")
        XCTAssertFalse(o.requests.contains { $0.target == "/cut" && $0.body.count == 10 })
    }
}
