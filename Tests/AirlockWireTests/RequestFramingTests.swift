import AirlockWire
import XCTest

/// Content-Length / Transfer-Encoding rules for requests (RFC 9112 6.1–6.3).
final class RequestFramingTests: XCTestCase {
    private func post(_ fields: String, version: String = "HTTP/1.1") throws -> RequestHead {
        try request("POST /upload \(version)\r\nHost: a\r\n\(fields)\r\n")
    }

    func testPostWithContentLength() throws {
        let head = try post("Content-Length: 42\r\nContent-Type: text/plain\r\n")
        XCTAssertEqual(head.method, .post)
        XCTAssertEqual(head.framing, .length(42))
        XCTAssertEqual(head.headers.first(.contentType), "text/plain")
        XCTAssertEqual(try post("Content-Length: 0\r\n").framing, .length(0))
        XCTAssertEqual(try post("").framing, .none)
    }

    func testLargestContentLengthAccepted() throws {
        XCTAssertEqual(try post("Content-Length: 9999999999999999999\r\n").framing, .length(9_999_999_999_999_999_999))
        XCTAssertEqual(try post("Content-Length: 007\r\n").framing, .length(7))
    }

    func testContentLengthWithTransferEncodingIsConflictingFraming() {
        assertWireError(try post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), .conflictingFraming, status: 400)
        assertWireError(try post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), .conflictingFraming, status: 400)
        assertWireError(try post("Transfer-Encoding: gzip\r\nContent-Length: 5\r\n"), .conflictingFraming, status: 400)
    }

    func testIdenticalDuplicateContentLengthsAreAccepted() throws {
        XCTAssertEqual(try post("Content-Length: 5, 5\r\n").framing, .length(5))
        XCTAssertEqual(try post("Content-Length: 5\r\nContent-Length: 5\r\n").framing, .length(5))
        XCTAssertEqual(try post("Content-Length: 5,5\r\ncontent-length: 5\r\n").framing, .length(5))
    }

    func testDifferingContentLengthsAreRejected() {
        assertWireError(try post("Content-Length: 5, 6\r\n"), .badContentLength, status: 400)
        assertWireError(try post("Content-Length: 5\r\nContent-Length: 6\r\n"), .badContentLength, status: 400)
        assertWireError(try post("Content-Length: 5\r\nContent-Length: 05, 6\r\n"), .badContentLength, status: 400)
    }

    func testMalformedContentLengthsAreRejected() {
        let bad = ["+1", "0x1", "1Z", "-1", "", " ", "1 2", "1.0", "1e3", "5,", ",5", "5, ,5", "\"5\"",
                   "18446744073709551616", "10000000000000000000", "00000000000000000001"]
        for value in bad {
            assertWireError(try post("Content-Length: \(value)\r\n"), .badContentLength, status: 400, "'\(value)'")
        }
    }

    func testContentLengthErrorDetailQuotesTheValue() {
        do {
            _ = try post("Content-Length: +1\r\n")
            XCTFail("expected an error")
        } catch let error as WireError {
            XCTAssertEqual(error.detail, "Content-Length: +1")
            XCTAssertEqual(error.reason, "bad-content-length")
            XCTAssertEqual(error.description, "bad-content-length: Content-Length: +1")
        } catch {
            XCTFail("\(error)")
        }
    }

    func testChunkedTransferEncoding() throws {
        XCTAssertEqual(try post("Transfer-Encoding: chunked\r\n").framing, .chunked)
        XCTAssertEqual(try post("Transfer-Encoding: ChUnKeD\r\n").framing, .chunked)
        XCTAssertEqual(try post("Transfer-Encoding:  chunked \r\n").framing, .chunked)
    }

    func testTransferEncodingOtherThanSingleChunkedIs501() {
        let bad = ["gzip, chunked", "chunked, chunked", "identity", "", "gzip", "chunked, gzip", "chunked;q=1",
                   "chunked chunked", "x-chunked", ","]
        for value in bad {
            assertWireError(try post("Transfer-Encoding: \(value)\r\n"), .unsupportedTransferCoding, status: 501, "'\(value)'")
        }
        assertWireError(try post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
                        .unsupportedTransferCoding, status: 501)
        assertWireError(try post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
                        .unsupportedTransferCoding, status: 501)
        assertWireError(try post("Transfer-Encoding: chunked\r\nTransfer-Encoding:\r\n"),
                        .unsupportedTransferCoding, status: 501)
    }

    func testTransferEncodingInHTTP10Is400() {
        assertWireError(try request("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
                        .transferEncodingInHTTP10, status: 400)
    }
}
