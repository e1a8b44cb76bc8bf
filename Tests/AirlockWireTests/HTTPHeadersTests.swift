import AirlockWire
import XCTest

/// The compact header store and WireError's surface.
final class HTTPHeadersTests: XCTestCase {
    func testAppendClassifiesAndTrims() {
        var headers = HTTPHeaders()
        headers.append(name: "content-length", value: " 5 ")
        headers.append(name: "X-Custom", value: "v")
        XCTAssertEqual(headers.count, 2)
        XCTAssertEqual(headers.known(at: 0), .contentLength)
        XCTAssertEqual(headers.known(at: 1), .other)
        XCTAssertEqual(headers.first(.contentLength), "5")
        XCTAssertEqual(headers.first(name: "x-CUSTOM"), "v")
        XCTAssertNil(headers.first(name: "missing"))
        XCTAssertNil(headers.first(.host))
    }

    /// `removeAll(keepingStorage:)` drops the fields of the given kinds and keeps the rest in
    /// order, the known-field bits following; `hasSoleDecimal` holds only for one field whose
    /// value is the number written plainly.
    func testRemovingKindsKeepingStorageAndTheSoleDecimal() {
        var headers = HTTPHeaders()
        headers.append(name: "Connection", value: "keep-alive")
        headers.append(name: "Content-Length", value: "120")
        headers.append(name: "X-A", value: "1")
        headers.append(name: "Keep-Alive", value: "timeout=5")
        headers.append(name: "Age", value: "3")
        headers.append(name: "X-B", value: "2")
        XCTAssertTrue(headers.hasSoleDecimal(.contentLength, 120))
        XCTAssertFalse(headers.hasSoleDecimal(.contentLength, 12))
        XCTAssertFalse(headers.hasSoleDecimal(.contentLength, 1120))
        XCTAssertFalse(headers.hasSoleDecimal(.contentLength, 0))
        XCTAssertFalse(headers.hasSoleDecimal(.age, 30))
        XCTAssertTrue(headers.hasSoleDecimal(.age, 3))
        XCTAssertFalse(headers.hasSoleDecimal(.transferEncoding, 0), "absent")
        var copy = headers
        copy.removeAll(keepingStorage: KnownField.Set(.connection, .keepAlive, .age))
        XCTAssertEqual((0..<copy.count).map { copy.name(at: $0) }, ["Content-Length", "X-A", "X-B"])
        XCTAssertEqual((0..<copy.count).map { copy.value(at: $0) }, ["120", "1", "2"])
        XCTAssertFalse(copy.contains(.connection))
        XCTAssertFalse(copy.contains(.age))
        XCTAssertTrue(copy.contains(.contentLength))
        XCTAssertEqual(headers.count, 6, "the original is untouched")
        XCTAssertEqual(headers.first(.age), "3")
        var same = copy
        same.removeAll(keepingStorage: KnownField.Set(.te))
        XCTAssertEqual(same, copy, "nothing of those kinds: unchanged")
        for bad in ["0120", "120, 120", "+120", "", "1 20"] {
            var h = HTTPHeaders()
            h.append(name: "Content-Length", value: bad)
            XCTAssertFalse(h.hasSoleDecimal(.contentLength, 120), bad)
        }
        var twice = HTTPHeaders()
        twice.append(name: "Content-Length", value: "0")
        XCTAssertTrue(twice.hasSoleDecimal(.contentLength, 0))
        twice.append(name: "Content-Length", value: "0")
        XCTAssertFalse(twice.hasSoleDecimal(.contentLength, 0), "two fields")
    }

    /// The compact form (a cache entry's copy of a head's fields) gives the same fields back:
    /// names, values, order, duplicates and the known-field bits, also after fields were
    /// dropped with their bytes left in the storage, and the room asked for.
    func testTheCompactFormGivesTheSameFieldsBack() throws {
        var headers = HTTPHeaders()
        headers.append(name: "Connection", value: "keep-alive")
        headers.append(name: "Content-Length", value: "120")
        headers.append(name: "ETag", value: "\"v1\"")
        headers.append(name: "X-Dup", value: "a")
        headers.append(name: "x-dup", value: "b")
        headers.append(name: "Age", value: "7")
        headers.removeAll(keepingStorage: KnownField.Set(.connection, .age))   // their bytes stay, unreferenced
        for source in [headers, HTTPHeaders()] {
            let size = source.compactCount
            let block = UnsafeMutableRawPointer.allocate(byteCount: size + 8, alignment: 8)
            defer { block.deallocate() }
            source.writeCompact(to: block)
            let copy = HTTPHeaders(compact: block, reservingBytes: 40, reservingEntries: 2)
            XCTAssertEqual(copy, source)
            XCTAssertEqual((0..<copy.count).map { copy.name(at: $0) }, (0..<source.count).map { source.name(at: $0) })
            XCTAssertEqual((0..<copy.count).map { copy.known(at: $0) }, (0..<source.count).map { source.known(at: $0) })
            XCTAssertGreaterThanOrEqual(copy.storageCapacity, source.storageCount + 40)
        }
        let size = headers.compactCount
        let block = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { block.deallocate() }
        headers.writeCompact(to: block)
        let copy = HTTPHeaders(compact: block)
        XCTAssertEqual(copy.count, 4)
        XCTAssertEqual(copy.first(.contentLength), "120")
        XCTAssertTrue(copy.contains(.etag), "the known-field bits come back")
        XCTAssertFalse(copy.contains(.connection))
        XCTAssertFalse(copy.contains(.age))
        XCTAssertEqual(copy.values(name: "x-dup"), ["a", "b"])
        XCTAssertTrue(copy.hasSoleDecimal(.contentLength, 120))
        // Dropping kinds while copying gives what `removeAll(keepingStorage:)` leaves.
        var kept = copy
        kept.removeAll(keepingStorage: KnownField.Set(.etag))
        let dropped = HTTPHeaders(compact: block, dropping: KnownField.Set(.etag), reservingEntries: 1)
        XCTAssertEqual(dropped, kept)
        XCTAssertFalse(dropped.contains(.etag))
        XCTAssertEqual(dropped.values(name: "x-dup"), ["a", "b"])
        XCTAssertEqual(HTTPHeaders(compact: block, dropping: KnownField.Set(.age)), copy, "nothing of those kinds: all kept")
    }

    func testValuesAndTokens() {
        var headers = HTTPHeaders()
        headers.append(name: "Connection", value: "Keep-Alive, ,X-A")
        headers.append(name: "Via", value: "1.1 a")
        headers.append(name: "connection", value: ", Upgrade,")
        XCTAssertEqual(headers.values(.connection), ["Keep-Alive, ,X-A", ", Upgrade,"])
        XCTAssertEqual(headers.tokens(.connection), ["keep-alive", "x-a", "upgrade"])
        XCTAssertEqual(headers.tokens(.te), [])
    }

    /// `filtered` keeps the chosen fields, byte for byte and in order, in storage of their own
    /// (a field appended next, with `reserving`, lands after them); `append(_:decimal:)` writes a
    /// known field's canonical name and the number's digits.
    func testFilteredKeepsTheChosenFieldsAndAppendDecimalWritesDigits() throws {
        let head = try Array("HTTP/1.1 200 OK\r\nConnection: close\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nX-A:  one \r\nAge: 5\r\nx-b: two\r\n\r\n".utf8).withUnsafeBytes { try ResponseParser.parse($0) }
        let h = head.headers
        var kept = h.filtered(reserving: 32) { !h.nameIs("connection", at: $0) && !h.nameIs("age", at: $0) }
        XCTAssertEqual((0..<kept.count).map { kept.name(at: $0) + "=" + kept.value(at: $0) },
                       ["Date=Sun, 06 Nov 1994 08:49:37 GMT", "X-A=one", "x-b=two"])
        XCTAssertEqual(kept.first(.date), "Sun, 06 Nov 1994 08:49:37 GMT")
        kept.append(.contentLength, decimal: 0)
        kept.append(.contentLength, decimal: 1_234_567_890)
        kept.append(.contentLength, decimal: Int.max)
        XCTAssertEqual(kept.values(name: "content-length"), ["0", "1234567890", String(Int.max)])
        XCTAssertEqual(kept.first(.contentLength), "0")
        XCTAssertEqual(kept.name(at: 3), "Content-Length")
        XCTAssertEqual(h.filtered { _ in false }.count, 0)
        XCTAssertEqual(h.filtered { _ in true }, h)
    }

    /// `firstDate` reads the first such field as an HTTP-date where it lies.
    func testFirstDateParsesTheFirstFieldOfThatName() throws {
        let head = try Array("HTTP/1.1 200 OK\r\nLast-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\nDate: Sunday, 06-Nov-94 08:49:37 GMT\r\nDate: Mon, 07 Nov 1994 08:49:37 GMT\r\nExpires: 0\r\n\r\n".utf8).withUnsafeBytes { try ResponseParser.parse($0) }
        XCTAssertEqual(head.headers.firstDate(name: "last-modified"), 784_111_777)
        XCTAssertEqual(head.headers.firstDate(.date), 784_111_777, "the first Date, in RFC 850 form")
        XCTAssertNil(head.headers.firstDate(name: "expires"), "not a date")
        XCTAssertNil(head.headers.firstDate(name: "etag"), "absent")
        XCTAssertNil(HTTPHeaders().firstDate(.date))
    }

    /// `firstIndex(lowercased:)` against the by-name look-up, over seeded random heads whose
    /// names differ in case and share lengths with the names asked for.
    func testOnePassLookupsAgreeWithTheByNameOnes() {
        let pool = ["Age", "age", "AGE", "agf", "Via", "Expires", "expireS", "Expirez", "Last-Modified", "last-modified",
                    "Last-Modifiee", "Vary", "VARY", "Vars", "Date", "If-None-Match", "if-modified-since", "X-Y"]
        let values = ["", "1", " 2 ", ", ,", ", 3, 4", "a, b", "*", "x,"]
        var seed: UInt64 = 42
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        for round in 0..<500 {
            var headers = HTTPHeaders()
            for _ in 0..<next(12) { headers.append(name: pool[next(pool.count)], value: values[next(values.count)]) }
            let context = "round \(round): \((0..<headers.count).map { headers.name(at: $0) })"
            XCTAssertEqual(headers.firstIndex(lowercased: "age"), headers.firstIndex(name: "age"), context)
            XCTAssertEqual(headers.firstIndex(lowercased: "last-modified"), headers.firstIndex(name: "last-modified"), context)
            XCTAssertEqual(headers.firstIndex(lowercased: "vary"), headers.firstIndex(name: "vary"), context)
        }
    }

    func testRemoveAll() {
        var headers = HTTPHeaders()
        headers.append(name: "Host", value: "a")
        headers.append(name: "Connection", value: "close")
        headers.append(name: "X-A", value: "1")
        headers.append(name: "connection", value: "x-a")
        headers.removeAll(.connection)
        XCTAssertEqual((0..<headers.count).map { headers.name(at: $0) }, ["Host", "X-A"])
        headers.removeAll(name: "x-a")
        XCTAssertEqual((0..<headers.count).map { headers.name(at: $0) }, ["Host"])
        XCTAssertEqual(headers.value(at: 0), "a")
    }

    func testEqualityComparesFieldsNotLayout() {
        var a = HTTPHeaders()
        a.append(name: "X-Gone", value: "1")
        a.append(name: "Host", value: "h")
        a.removeAll(name: "X-Gone")
        var b = HTTPHeaders()
        b.append(name: "Host", value: "h")
        XCTAssertEqual(a, b)
        b.append(name: "Via", value: "x")
        XCTAssertNotEqual(a, b)
        var c = HTTPHeaders()
        c.append(name: "host", value: "h")
        XCTAssertNotEqual(a.count == 1 ? a : b, c, "names compare byte for byte")
    }

    func testParsedHeadersEqualAppendedOnes() throws {
        let head = try request("GET / HTTP/1.1\r\nHost: h\r\nX-A:  1 \r\n\r\n")
        var expected = HTTPHeaders()
        expected.append(name: "Host", value: "h")
        expected.append(name: "X-A", value: "1")
        XCTAssertEqual(head.headers, expected)
    }

    func testParsingIntoReusedStorageKeepsNothingOfTheOldHead() throws {
        let big = "GET /a HTTP/1.1\r\nHost: first.test\r\nX-Long: " + String(repeating: "v", count: 300)
            + "\r\nX-B: 2\r\nX-C: 3\r\nConnection: close\r\n\r\n"
        let small = "GET /b HTTP/1.1\r\nHost: h\r\nX-A:  1 \r\n\r\n"
        let previous = try request(big).headers
        let capacityBefore = previous.retainedBytes
        let reused = try Array(small.utf8).withUnsafeBytes {
            try RequestParser.parse($0, limits: WireLimits(), reusing: previous)
        }
        let fresh = try request(small)
        XCTAssertEqual(reused.headers, fresh.headers)
        XCTAssertEqual(reused.headers.count, 2)
        XCTAssertEqual(reused.headers.first(name: "x-long"), nil)
        XCTAssertEqual(reused.headers.value(at: 1), "1")
        XCTAssertTrue(reused.keepAlive, "framing facts come from the new head only")
        XCTAssertGreaterThanOrEqual(reused.headers.retainedBytes, capacityBefore,
                                    "the donated storage is kept, not shrunk")

        let resp = try Array("HTTP/1.1 204 No Content\r\nX-R: r\r\n\r\n".utf8).withUnsafeBytes {
            try ResponseParser.parse($0, reusing: reused.headers)
        }
        XCTAssertEqual(resp.headers.count, 1)
        XCTAssertEqual(resp.headers.name(at: 0), "X-R")
        XCTAssertEqual(resp.headers.value(at: 0), "r")
        XCTAssertEqual(reused.headers.value(at: 0), "h", "a donor still in use keeps its fields (copy on write)")
    }

    func testWireErrorStatusesAndReasons() {
        let cases: [(WireError.Code, Int, String)] = [
            (.requestLineTooLong, 414, "request-line-too-long"), (.headersTooLarge, 431, "headers-too-large"),
            (.tooManyHeaders, 431, "too-many-headers"), (.unsupportedVersion, 505, "unsupported-version"),
            (.unsupportedTransferCoding, 501, "unsupported-transfer-coding"), (.bodyTooLarge, 413, "body-too-large"),
            (.badContentLength, 400, "bad-content-length"), (.bareLF, 400, "bare-lf"),
        ]
        for (code, status, reason) in cases {
            let error = WireError(code, "d")
            XCTAssertEqual(error.status, status, reason)
            XCTAssertEqual(error.reason, reason)
            XCTAssertEqual(error.description, "\(reason): d")
        }
    }

    func testErrorDetailIsSanitisedAndShort() {
        let line = "X-Evil: \u{1B}[31m" + String(repeating: "z", count: 100)
        do {
            _ = try request("GET / HTTP/1.1\r\nHost: a\r\n\(line)\r\n\r\n")
            XCTFail("expected an error")
        } catch let error as WireError {
            XCTAssertEqual(error.code, .badHeaderValue)
            XCTAssertTrue(error.detail.contains("\\x1B"), error.detail)
            XCTAssertFalse(error.detail.unicodeScalars.contains { $0.value < 0x20 }, error.detail)
            XCTAssertLessThan(error.detail.utf8.count, 100)
        } catch {
            XCTFail("\(error)")
        }
    }
}
