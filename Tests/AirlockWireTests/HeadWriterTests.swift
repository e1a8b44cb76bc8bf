import AirlockWire
import XCTest

/// Canonical output of HeadWriter and ChunkedEncoder, hop-by-hop stripping and reason phrases.
final class HeadWriterTests: XCTestCase {
    private func text(_ writer: borrowing HeadWriter) -> String { String(decoding: writer.bytes, as: UTF8.self) }

    func testRequestHeadIsCanonical() {
        var writer = HeadWriter()
        writer.requestLine(method: .get, target: "/x?y=1")
        writer.field(name: "Host", value: "example.com")
        writer.field(name: "Accept", value: "  */*  ")
        writer.end()
        XCTAssertEqual(text(writer), "GET /x?y=1 HTTP/1.1\r\nHost: example.com\r\nAccept:   */*  \r\n\r\n")
    }

    /// A request id from its parts, hexadecimal written in place (no String built).
    func testPrefixAndHexField() {
        var writer = HeadWriter()
        for (serial, hex) in [(UInt64(0), "0"), (0x9, "9"), (0xa, "a"), (0x2f, "2f"), (0x10, "10"), (UInt64.max, "ffffffffffffffff")] {
            writer.reset()
            writer.field(HeadWriter.FieldPrefix(name: "X-Request-Id", valuePrefix: "ab12-3-"), hex: serial)
            XCTAssertEqual(text(writer), "X-Request-Id: ab12-3-\(hex)\r\n")
        }
        writer.reset()
        writer.field(HeadWriter.FieldPrefix(name: "X Bad", valuePrefix: "a\r\nb-"), hex: 1)
        XCTAssertEqual(text(writer), "XBad: a  b-1\r\n", "the prefix is checked like any field when made")
    }

    func testStatusLineIsCanonical() {
        var writer = HeadWriter()
        writer.statusLine(status: 404, reason: ReasonPhrase.standard(for: 404))
        writer.field(name: "Content-Length", value: "0")
        writer.end()
        XCTAssertEqual(text(writer), "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        var other = HeadWriter()
        other.statusLine(status: 599, reason: "")
        XCTAssertEqual(text(other), "HTTP/1.1 599 \r\n")
    }

    func testFieldFromHeadersCopiesBytesAsReceived() throws {
        let bytes = Array("GET / HTTP/1.1\r\nhost: a\r\nX-Odd:  caf".utf8) + [0xC3, 0xA9, 0xFF] + Array("  \r\n\r\n".utf8)
        let head = try request(bytes: bytes)
        var writer = HeadWriter()
        for i in 0..<head.headers.count { writer.field(from: head.headers, at: i) }
        XCTAssertEqual(writer.bytes, Array("host: a\r\nX-Odd: caf".utf8) + [0xC3, 0xA9, 0xFF] + Array("\r\n".utf8))
    }

    func testWriterNeverEmitsInjectedLines() {
        var writer = HeadWriter()
        writer.requestLine(method: .other("GET /evil"), target: "/a b\r\nX: y")
        writer.field(name: "X-Bad\r\nInjected", value: "v\r\nSet-Cookie: a=b\u{0}")
        writer.statusLine(status: 200, reason: "OK\r\nX: y")
        XCTAssertEqual(text(writer), "GETevil /a%20bX:%20y HTTP/1.1\r\nX-BadInjected: v  Set-Cookie: a=b \r\nHTTP/1.1 200 OK  X: y\r\n")
    }

    func testWrittenHeadParsesBackToTheSameHead() throws {
        var writer = HeadWriter()
        writer.requestLine(method: .post, target: "/submit")
        writer.field(name: "Host", value: "a.test:81")
        writer.field(name: "Transfer-Encoding", value: "chunked")
        writer.end()
        let head = try request(bytes: writer.bytes)
        XCTAssertEqual(head.method, .post)
        XCTAssertEqual(head.framing, .chunked)
        XCTAssertEqual(head.host, "a.test")
        XCTAssertEqual(head.port, 81)
    }

    func testDecimalAndStaticNameFields() {
        var writer = HeadWriter()
        for n: UInt64 in [0, 9, 10, 100, 1_048_576, UInt64.max] { writer.field("Content-Length", decimal: n) }
        writer.field("Via", value: "1.1 a\r\nX: y")
        writer.field("Bad Name", value: "v")
        XCTAssertEqual(text(writer), "Content-Length: 0\r\nContent-Length: 9\r\nContent-Length: 10\r\n"
            + "Content-Length: 100\r\nContent-Length: 1048576\r\nContent-Length: 18446744073709551615\r\n"
            + "Via: 1.1 a  X: y\r\nBadName: v\r\n")
    }

    /// A value built in place is checked like any other: a CR, LF or NUL written into it
    /// becomes SP, and the writer grows for the room asked (not for what was written).
    func testValueBuiltInPlaceIsCheckedAndGrowsTheWriter() {
        var writer = HeadWriter(capacity: 64)
        writer.field("X-Built", capacity: 8) { $0.append("a\r\nX: y") }
        writer.field("X-Built", capacity: 200) { out in
            for _ in 0..<20 { out.append("0123456789") }
        }
        writer.field("X-Empty", capacity: 0) { _ in }
        writer.field("Bad Name", capacity: 4) { $0.append("v\u{0}") }
        XCTAssertEqual(text(writer), "X-Built: a  X: y\r\nX-Built: " + String(repeating: "0123456789", count: 20) + "\r\n"
            + "X-Empty: \r\nBadName: v \r\n")
    }

    func testWriterGrowsPastItsCapacityAndKeepsEveryByte() {
        var writer = HeadWriter(capacity: 16)
        let long = String(repeating: "abcdefghij", count: 1_000)
        writer.statusLine(status: 200, reason: "OK")
        writer.field(name: "X-Long", value: long)
        writer.field(name: "X-After", value: "1")
        writer.end()
        XCTAssertEqual(text(writer), "HTTP/1.1 200 OK\r\nX-Long: \(long)\r\nX-After: 1\r\n\r\n")
        XCTAssertEqual(writer.count, writer.bytes.count)
        writer.reset()
        writer.end()
        XCTAssertEqual(writer.bytes, [0x0D, 0x0A])
    }

    func testStatusOutsideThreeDigitsIsClamped() {
        var writer = HeadWriter()
        writer.statusLine(status: 1000, reason: "x")
        XCTAssertEqual(text(writer), "HTTP/1.1 999 x\r\n")
        writer.reset()
        XCTAssertTrue(writer.bytes.isEmpty)
    }

    func testChunkedEncoder() {
        XCTAssertEqual(ChunkedEncoder.chunkHeader(size: 26), Array("1a\r\n".utf8))
        XCTAssertEqual(ChunkedEncoder.chunkHeader(size: 1), Array("1\r\n".utf8))
        XCTAssertEqual(ChunkedEncoder.chunkHeader(size: 4096), Array("1000\r\n".utf8))
        XCTAssertEqual(ChunkedEncoder.chunkHeader(size: Int.max), Array("7fffffffffffffff\r\n".utf8))
        XCTAssertEqual(ChunkedEncoder.chunkTrailer, Array("\r\n".utf8))
        XCTAssertEqual(ChunkedEncoder.last, Array("0\r\n\r\n".utf8))
    }

    func testHopByHopStripsConnectionListedNames() throws {
        let head = try request("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Secret , Upgrade\r\n"
            + "x-secret: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nTrailer: X\r\nUpgrade: h2c\r\n"
            + "Proxy-Connection: close\r\nProxy-Authorization: Basic Zm9v\r\nAccept: */*\r\nVia: 1.1 p\r\n\r\n")
        let tokens = head.headers.tokens(.connection)
        XCTAssertEqual(tokens, ["keep-alive", "x-secret", "upgrade"])
        let kept = (0..<head.headers.count)
            .filter { !HopByHop.isHopByHop(head.headers, at: $0, connectionTokens: tokens) }
            .map { head.headers.name(at: $0) }
        XCTAssertEqual(kept, ["Host", "Accept", "Via"])
    }

    func testHopByHopIncludesFramingFields() throws {
        let head = try request("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Type: a/b\r\n\r\n")
        XCTAssertTrue(HopByHop.isHopByHop(head.headers, at: 1, connectionTokens: []))
        XCTAssertFalse(HopByHop.isHopByHop(head.headers, at: 2, connectionTokens: []))
        XCTAssertTrue(HopByHop.isHopByHop(head.headers, at: 2, connectionTokens: ["content-type"]))
    }

    func testReasonPhrases() {
        XCTAssertEqual(ReasonPhrase.standard(for: 200), "OK")
        XCTAssertEqual(ReasonPhrase.standard(for: 414), "URI Too Long")
        XCTAssertEqual(ReasonPhrase.standard(for: 431), "Request Header Fields Too Large")
        XCTAssertEqual(ReasonPhrase.standard(for: 502), "Bad Gateway")
        XCTAssertEqual(ReasonPhrase.standard(for: 508), "Loop Detected", "RFC 5842")
        XCTAssertEqual(ReasonPhrase.standard(for: 799), "Unknown")
    }
}
