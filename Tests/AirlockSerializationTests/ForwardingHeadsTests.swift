import AirlockSerialization
import AirlockWire
import XCTest

/// The heads Airlock writes from the parsed model: Via in both directions, received Via
/// lines forwarded byte for byte.
final class ForwardingHeadsTests: XCTestCase {
    private func requestHead(_ bytes: [UInt8]) throws -> RequestHead {
        try bytes.withUnsafeBytes { try RequestParser.parse($0, limits: WireLimits()) }
    }

    private func responseHead(_ bytes: [UInt8]) throws -> ResponseHead {
        try bytes.withUnsafeBytes { try ResponseParser.parse($0) }
    }

    private func lines(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var line: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x0D, i + 1 < bytes.count, bytes[i + 1] == 0x0A {
                out.append(line)
                line = []
                i += 2
            } else {
                line.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// Received Via lines go out as they came, obs-text bytes included (not re-decoded as
    /// UTF-8), in order, and ours follows them as its own line.
    func testRequestKeepsReceivedViaBytesAndAddsOurs() throws {
        let obsText: [UInt8] = Array("1.0 fred (caf".utf8) + [0xE9] + Array(")".utf8)
        let head = try requestHead(Array("GET /x HTTP/1.1\r\nHost: a.test\r\nVia: ".utf8) + obsText
                                   + Array("\r\nX-A: 1\r\nVia: 1.1 p.example\r\n\r\n".utf8))
        var w = HeadWriter()
        ForwardingHeads.request(head, host: "up.test", framing: .none, viaToken: "airlock-t",
                                viaToken11: "1.1 airlock-t", idSerial: Self.ownSerial, clientID: nil, idPrefix: Self.ownPrefix, into: &w)
        let out = lines(w.bytes)
        let vias = out.filter { $0.starts(with: Array("Via: ".utf8)) }
        XCTAssertEqual(vias, [Array("Via: ".utf8) + obsText, Array("Via: 1.1 p.example".utf8),
                              Array("Via: 1.1 airlock-t".utf8)])
        XCTAssertTrue(out.contains(Array("X-A: 1".utf8)))
    }

    func testHTTP10RequestGetsA10ViaToken() throws {
        let head = try requestHead(Array("GET /x HTTP/1.0\r\n\r\n".utf8))
        var w = HeadWriter()
        ForwardingHeads.request(head, host: "up.test", framing: .none, viaToken: "airlock-t",
                                viaToken11: "1.1 airlock-t", idSerial: Self.ownSerial, clientID: nil, idPrefix: Self.ownPrefix, into: &w)
        XCTAssertTrue(lines(w.bytes).contains(Array("Via: 1.0 airlock-t".utf8)))
    }

    /// Responses carry our Via too (RFC 9110 7.6.3: every forwarded message), naming the
    /// protocol the upstream answered with, after the upstream's own Via lines.
    func testResponseGetsOurViaAfterTheUpstreams() throws {
        for (version, token) in [("HTTP/1.1", "1.1 airlock-t"), ("HTTP/1.0", "1.0 airlock-t")] {
            let head = try responseHead(Array("\(version) 200 OK\r\nVia: 1.1 cdn\r\nContent-Length: 2\r\n\r\n".utf8))
            var w = HeadWriter()
            ForwardingHeads.response(head, framing: .length(2), out: .length, requestMethod: .get,
                                     keepAlive: true, clientVersion: .http11,
                                     viaToken: "airlock-t", viaToken11: "1.1 airlock-t", idSerial: Self.ownSerial, clientID: nil, idPrefix: Self.ownPrefix, into: &w)
            let vias = lines(w.bytes).filter { $0.starts(with: Array("Via: ".utf8)) }
            XCTAssertEqual(vias, [Array("Via: 1.1 cdn".utf8), Array("Via: \(token)".utf8)], version)
        }
    }

    /// The fields the cache reads are known now: they still go out byte for byte, names in the
    /// case they came in, in order, both ways (only hop-by-hop fields are dropped).
    func testCacheFieldsAreRelayedAsReceived() throws {
        let requestFields = ["cache-CONTROL: no-cache", "AUTHORIZATION: Basic eA==", "if-none-match: \"a\"",
                             "If-Modified-Since: Tue, 24 Nov 2026 09:00:00 GMT", "RANGE: bytes=0-"]
        let request = try requestHead(Array(("GET /x HTTP/1.1\r\nHost: a.test\r\n" + requestFields.joined(separator: "\r\n")
                                             + "\r\nConnection: close\r\n\r\n").utf8))
        var w = HeadWriter()
        ForwardingHeads.request(request, host: "up.test", framing: .none, viaToken: "airlock-t",
                                viaToken11: "1.1 airlock-t", idSerial: Self.ownSerial, clientID: nil, idPrefix: Self.ownPrefix, into: &w)
        let up = lines(w.bytes).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(Array(up[2..<(2 + requestFields.count)]), requestFields)

        let responseFields = ["cache-control: max-age=5", "ETAG: \"a\"", "age: 3", "VARY: Accept", "set-COOKIE: a=b",
                              "last-modified: Tue, 24 Nov 2026 09:00:00 GMT", "EXPIRES: 0"]
        let response = try responseHead(Array(("HTTP/1.1 200 OK\r\n" + responseFields.joined(separator: "\r\n")
                                               + "\r\nKeep-Alive: 5\r\nContent-Length: 2\r\n\r\n").utf8))
        w = HeadWriter()
        ForwardingHeads.response(response, framing: .length(2), out: .length, requestMethod: .get, keepAlive: true,
                                 clientVersion: .http11, viaToken: "airlock-t", viaToken11: "1.1 airlock-t",
                                 idSerial: Self.ownSerial, clientID: nil, idPrefix: Self.ownPrefix, into: &w)
        let down = lines(w.bytes).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(Array(down[1..<(1 + responseFields.count)]), responseFields)
        XCTAssertFalse(down.contains { $0.lowercased().hasPrefix("keep-alive") })
    }

    /// Airlock's own id "ab12-1-2f": worker 1's prefix and serial 0x2f.
    static let ownSerial: UInt64 = 0x2f
    static let ownPrefix = HeadWriter.FieldPrefix(name: "X-Request-Id", valuePrefix: "ab12-1-")

    /// A request id goes up and back as X-Request-Id: Airlock's own (written from its numbers),
    /// or the client's one well-formed id, never a second copy, never the upstream's.
    func testRequestIDGoesUpstreamAndBack() throws {
        func up(_ raw: String) throws -> [[UInt8]] {
            let head = try requestHead(Array(raw.utf8))
            let client = RequestIDField.clientID(in: head.headers)
            var w = HeadWriter()
            ForwardingHeads.request(head, host: "up.test", framing: .none, viaToken: "airlock-t",
                                    viaToken11: "1.1 airlock-t", idSerial: Self.ownSerial, clientID: client,
                                    idPrefix: Self.ownPrefix, into: &w)
            return lines(w.bytes).filter { $0.starts(with: Array("X-Request-Id: ".utf8)) }
        }
        XCTAssertEqual(try up("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), [Array("X-Request-Id: ab12-1-2f".utf8)])
        XCTAssertEqual(try up("GET /x HTTP/1.1\r\nHost: a\r\nx-request-id: client.id:7\r\n\r\n"),
                       [Array("X-Request-Id: client.id:7".utf8)], "a well-formed client id is kept")
        XCTAssertEqual(try up("GET /x HTTP/1.1\r\nHost: a\r\nX-Request-Id: bad id\r\n\r\n"),
                       [Array("X-Request-Id: ab12-1-2f".utf8)], "a malformed one is replaced")
        XCTAssertEqual(try up("GET /x HTTP/1.1\r\nHost: a\r\nX-Request-Id: a\r\nX-Request-Id: b\r\n\r\n"),
                       [Array("X-Request-Id: ab12-1-2f".utf8)], "two ids are no id: replaced")
        XCTAssertEqual(try up("GET /x HTTP/1.1\r\nHost: a\r\nX-Request-Id: \(String(repeating: "x", count: 129))\r\n\r\n"),
                       [Array("X-Request-Id: ab12-1-2f".utf8)], "too long: replaced")

        let resp = try responseHead(Array("HTTP/1.1 200 OK\r\nX-Request-Id: upstream-own\r\nContent-Length: 0\r\n\r\n".utf8))
        var w = HeadWriter()
        ForwardingHeads.response(resp, framing: .length(0), out: .length, requestMethod: .get, keepAlive: true,
                                 clientVersion: .http11, viaToken: "airlock-t", viaToken11: "1.1 airlock-t",
                                 idSerial: Self.ownSerial, clientID: nil, idPrefix: Self.ownPrefix, into: &w)
        XCTAssertEqual(lines(w.bytes).filter { $0.starts(with: Array("X-Request-Id: ".utf8)) },
                       [Array("X-Request-Id: ab12-1-2f".utf8)], "the client sees its task's id, not the upstream's")
    }
}
