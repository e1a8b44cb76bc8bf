import AirlockWire
import XCTest

/// The incremental end-of-head finder and its early limits.
final class HeadScannerTests: XCTestCase {
    private func scanAll(_ bytes: [UInt8], kind: HeadKind = .request, limits: WireLimits = WireLimits()) throws -> Int? {
        var scanner = HeadScanner(kind: kind, limits: limits)
        return try bytes.withUnsafeBytes { try scanner.scan($0) }
    }

    /// Feeds growing prefixes one byte at a time; returns the first length reported and the
    /// prefix size at which it was reported.
    private func scanByteByByte(
        _ bytes: [UInt8], kind: HeadKind = .request, limits: WireLimits = WireLimits()
    ) throws -> (length: Int, at: Int)? {
        var scanner = HeadScanner(kind: kind, limits: limits)
        for end in 1...bytes.count {
            let found = try bytes.withUnsafeBytes { try scanner.scan(UnsafeRawBufferPointer(rebasing: $0[..<end])) }
            if let found { return (found, end) }
        }
        return nil
    }

    func testOneByteAtATimeMatchesAllAtOnce() throws {
        let heads = [
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "\r\nPOST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n",
            "GET / HTTP/1.0\r\n\r\n",
        ]
        for text in heads {
            let bytes = Array(text.utf8)
            let whole = try scanAll(bytes)
            let incremental = try scanByteByByte(bytes)
            XCTAssertNotNil(whole, text)
            XCTAssertEqual(incremental?.length, whole, text)
            XCTAssertEqual(incremental?.at, whole, "reported as soon as the final LF arrived")
        }
        let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi".utf8)
        XCTAssertEqual(try scanAll(response, kind: .response), response.count - 2)
        XCTAssertEqual(try scanByteByByte(response, kind: .response)?.length, response.count - 2)
    }

    func testLengthExcludesPipelinedBytes() throws {
        let bytes = Array("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        XCTAssertEqual(try scanAll(bytes), bytes.count / 2)
    }

    func testNeedsMoreUntilTheEmptyLine() throws {
        XCTAssertNil(try scanAll(Array("GET / HTTP/1.1\r\nHost: a\r\n".utf8)))
        XCTAssertNil(try scanAll(Array("GET / HTTP/1.1\r\nHost: a\r\n\r".utf8)))
        XCTAssertNil(try scanAll(Array("\r\n".utf8)))
    }

    func testLeadingCRLFIsCountedInTheLength() throws {
        let bytes = Array("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        XCTAssertEqual(try scanAll(bytes), bytes.count)
    }

    func testRequestLineLimitThrows414BeforeAnyLF() {
        let limits = WireLimits(requestLineBytes: 16)
        let ok = Array("GET /aaaaaaaaaaa".utf8)          // 16 bytes, no LF yet: still fine
        XCTAssertNoThrow(XCTAssertNil(try scanAll(ok, limits: limits)))
        let tooLong = Array("GET /aaaaaaaaaaaaa".utf8)   // 18 bytes: cannot be a 16-byte line + CRLF
        assertWireError(try scanAll(tooLong, limits: limits), .requestLineTooLong, status: 414)
        assertWireError(try scanByteByByte(tooLong, limits: limits), .requestLineTooLong, status: 414)
    }

    func testRequestLineLimitIgnoresTheLeadingCRLF() throws {
        let limits = WireLimits(requestLineBytes: 14)
        let bytes = Array("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        XCTAssertEqual(try scanAll(bytes, limits: limits), bytes.count)
    }

    func testResponsesHaveNoLineLimit() throws {
        let bytes = Array("HTTP/1.1 200 \(String(repeating: "x", count: 100))\r\n\r\n".utf8)
        XCTAssertEqual(try scanAll(bytes, kind: .response, limits: WireLimits(requestLineBytes: 10)), bytes.count)
    }

    func testHeadLimitThrows431BeforeTheEnd() throws {
        let limits = WireLimits(headerBytes: 32)
        let head = Array("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n".utf8)
        XCTAssertEqual(head.count, 33)
        assertWireError(try scanAll(head, limits: limits), .headersTooLarge, status: 431)
        assertWireError(try scanAll(Array(head.prefix(33)) + Array("more".utf8), limits: limits), .headersTooLarge, status: 431)
        XCTAssertNoThrow(XCTAssertNil(try scanAll(Array(head.prefix(32)), limits: limits)))
        XCTAssertEqual(try scanAll(head, limits: WireLimits(headerBytes: 33)), 33)
    }

    /// A peer that never ends its head, shown at most `window` bytes (as the connections
    /// show it their buffered input): the scanner decides 431 instead of waiting for more.
    /// Shown only `headerBytes`, it could not tell (an upstream's over-long head once hung the
    /// exchange until the upstream timeout).
    func testEndlessHeadThrowsWithinTheWindowForBothKinds() throws {
        let limits = WireLimits(headerBytes: 64)
        for (kind, start) in [(HeadKind.request, "GET / HTTP/1.1\r\n"), (.response, "HTTP/1.1 200 OK\r\n")] {
            let endless = Array((start + String(repeating: "X-A: aaaaaaaaaa\r\n", count: 20)).utf8)
            var scanner = HeadScanner(kind: kind, limits: limits)
            XCTAssertGreaterThan(scanner.window, limits.headerBytes)
            let shown = Array(endless.prefix(scanner.window))
            assertWireError(try shown.withUnsafeBytes { try scanner.scan($0) }, .headersTooLarge, status: 431)
            var short = HeadScanner(kind: kind, limits: limits)
            XCTAssertNil(try Array(endless.prefix(limits.headerBytes)).withUnsafeBytes { try short.scan($0) },
                         "shown only the limit, the scanner cannot decide yet")
        }
    }

    func testBareLFThrows() {
        assertWireError(try scanAll(Array("GET / HTTP/1.1\n".utf8)), .bareLF, status: 400)
        assertWireError(try scanAll(Array("GET / HTTP/1.1\r\nHost: a\n\n".utf8)), .bareLF, status: 400)
        assertWireError(try scanAll(Array("\n".utf8)), .bareLF, status: 400)
        assertWireError(try scanByteByByte(Array("HTTP/1.1 200 OK\r\nX: y\n\r\n".utf8), kind: .response), .bareLF)
    }

    func testResetAndRepeat() throws {
        var scanner = HeadScanner(kind: .request, limits: WireLimits())
        let first = Array("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let second = Array("GET /22 HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        XCTAssertEqual(try first.withUnsafeBytes { try scanner.scan($0) }, first.count)
        XCTAssertTrue(scanner.isComplete)
        XCTAssertEqual(try first.withUnsafeBytes { try scanner.scan($0) }, first.count, "stays complete")
        scanner.reset()
        XCTAssertFalse(scanner.isComplete)
        XCTAssertEqual(try second.withUnsafeBytes { try scanner.scan($0) }, second.count)
    }
}
