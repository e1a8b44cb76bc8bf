import AirlockWire
import XCTest

/// Status line, framing and keep-alive of upstream responses (RFC 9112 4, 6.3).
final class ResponseParserTests: XCTestCase {
    func testOKWithContentLength() throws {
        let head = try response("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nServer: origin\r\n\r\n")
        XCTAssertEqual(head.version, .http11)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.reason, "OK")
        XCTAssertEqual(head.headers.first(.server), "origin")
        XCTAssertEqual(head.framing(requestMethod: .get), .length(12))
        XCTAssertTrue(head.keepAlive)
    }

    func testReasonMayBeEmptyOrAbsent() throws {
        XCTAssertEqual(try response("HTTP/1.1 404 \r\n\r\n").reason, "")
        let bare = try response("HTTP/1.1 404\r\n\r\n")
        XCTAssertEqual(bare.status, 404)
        XCTAssertEqual(bare.reason, "")
        XCTAssertEqual(try response("HTTP/1.0 500 Internal  Server\tError\r\n\r\n").reason, "Internal  Server\tError")
    }

    func testStatusMustBeExactlyThreeDigits() {
        for line in ["HTTP/1.1 2000 OK", "HTTP/1.1 20 OK", "HTTP/1.1 abc OK", "HTTP/1.1 0200 OK", "HTTP/1.1 099 Low",
                     "HTTP/1.1  200 OK", "HTTP/1.1 200OK", "HTTP/1.1 2OO OK", "HTTP/1.1", "HTTP/1.1 ", "HTTP/1.1 +20 OK"] {
            assertWireError(try response("\(line)\r\n\r\n"), .badStatusLine, "'\(line)'")
        }
    }

    func testStatusLineVersionMustBe10Or11() {
        assertWireError(try response("HTTP/2.0 200 OK\r\n\r\n"), .unsupportedVersion)
        assertWireError(try response("HTTP/0.9 200 OK\r\n\r\n"), .unsupportedVersion)
        assertWireError(try response("HTTP/1.1x 200 OK\r\n\r\n"), .badVersion)
        assertWireError(try response("ICY 200 OK\r\n\r\n"), .badVersion)
        assertWireError(try response("http/1.1 200 OK\r\n\r\n"), .badVersion)
    }

    func testControlBytesInReasonAreRejected() {
        assertWireError(try response("HTTP/1.1 200 O\u{0}K\r\n\r\n"), .badStatusLine)
        assertWireError(try response("HTTP/1.1 200 O\rK\r\n\r\n"), .bareCR)
        assertWireError(try response("HTTP/1.1 200 OK\nX: y\r\n\r\n"), .bareLF)
    }

    func testEmptyStatusLineIsRejected() throws {
        let bytes = Array("\r\nHTTP/1.1 200 OK\r\n\r\n".utf8)
        try bytes.withUnsafeBytes { buf in
            var scanner = HeadScanner(kind: .response, limits: WireLimits())
            XCTAssertEqual(try scanner.scan(buf), 2, "responses get no leading empty line: it ends the head")
            assertWireError(try ResponseParser.parse(UnsafeRawBufferPointer(rebasing: buf[..<2])), .badStatusLine)
        }
    }

    func testContentLengthWithTransferEncodingIsConflictingFraming() {
        assertWireError(try response("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
                        .conflictingFraming)
    }

    func testDifferingAndMalformedContentLengthsAreRejected() {
        assertWireError(try response("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), .badContentLength)
        assertWireError(try response("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n"), .badContentLength)
        assertWireError(try response("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n"), .badContentLength)
        assertWireError(try response("HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n"), .badContentLength)
        XCTAssertEqual(try response("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n").framing(requestMethod: .get), .length(3))
    }

    func testTransferEncodingOtherThanSingleChunkedIsRejected() {
        for value in ["gzip", "gzip, chunked", "chunked, chunked", "identity", ""] {
            assertWireError(try response("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(value)\r\n\r\n"),
                            .unsupportedTransferCoding, "'\(value)'")
        }
        assertWireError(try response("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), .transferEncodingInHTTP10)
    }

    func testFieldSyntaxIsCheckedAsForRequests() {
        assertWireError(try response("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"), .obsFold)
        assertWireError(try response("HTTP/1.1 200 OK\r\nX : a\r\n\r\n"), .whitespaceBeforeColon)
        assertWireError(try response("HTTP/1.1 200 OK\r\nX a\r\n\r\n"), .missingColon)
        assertWireError(try response("HTTP/1.1 200 OK\r\nX: a\u{1}\r\n\r\n"), .badHeaderValue)
    }

    func testFramingByMethodAndStatus() throws {
        let chunked = try response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertEqual(chunked.framing(requestMethod: .get), .chunked)
        XCTAssertEqual(chunked.framing(requestMethod: .head), .none)

        let sized = try response("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        XCTAssertEqual(sized.framing(requestMethod: .head), .none, "HEAD responses never have a body")
        XCTAssertEqual(sized.framing(requestMethod: .post), .length(10))

        XCTAssertEqual(try response("HTTP/1.1 204 No Content\r\n\r\n").framing(requestMethod: .get), .none)
        XCTAssertEqual(try response("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n").framing(requestMethod: .get), .none)
        XCTAssertEqual(try response("HTTP/1.1 100 Continue\r\n\r\n").framing(requestMethod: .put), .none)
        XCTAssertEqual(try response("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n").framing(requestMethod: .get), .none)
        XCTAssertEqual(try response("HTTP/1.1 200 OK\r\n\r\n").framing(requestMethod: .get), .closeDelimited)
        XCTAssertEqual(try response("HTTP/1.1 200 Connection established\r\n\r\n").framing(requestMethod: .connect), .none)
        XCTAssertEqual(try response("HTTP/1.1 407 Auth\r\nContent-Length: 2\r\n\r\n").framing(requestMethod: .connect), .length(2))
    }

    func testInformational() throws {
        XCTAssertTrue(try response("HTTP/1.1 100 Continue\r\n\r\n").isInformational)
        XCTAssertFalse(try response("HTTP/1.1 101 Switching Protocols\r\n\r\n").isInformational)
    }

    func testKeepAlive() throws {
        XCTAssertTrue(try response("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").keepAlive)
        XCTAssertFalse(try response("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").keepAlive)
        XCTAssertFalse(try response("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keepAlive)
        XCTAssertTrue(try response("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").keepAlive)
    }

    func testFieldCountLimitWhenGivenLimits() throws {
        let head = Array("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n".utf8)
        try head.withUnsafeBytes { buf in
            assertWireError(try ResponseParser.parse(buf, limits: WireLimits(headerCount: 1)), .tooManyHeaders, status: 431)
            XCTAssertNoThrow(try ResponseParser.parse(buf, limits: WireLimits(headerCount: 2)))
        }
    }
}
