import AirlockWire
import XCTest

/// Field-line syntax (RFC 9112 5) and the head-size / field-count limits.
final class FieldLineTests: XCTestCase {
    private func withField(_ line: String) -> String {
        "GET / HTTP/1.1\r\nHost: a\r\n\(line)\r\n\r\n"
    }

    func testWhitespaceBetweenNameAndColonIsRejected() {
        assertWireError(try request(withField("X-Foo : bar")), .whitespaceBeforeColon, status: 400)
        assertWireError(try request(withField("X-Foo\t: bar")), .whitespaceBeforeColon, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), .whitespaceBeforeColon, status: 400)
        assertWireError(try request("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n"),
                        .whitespaceBeforeColon, status: 400)
    }

    func testObsFoldIsRejected() {
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\r\nX-Foo: bar\r\n baz\r\n\r\n"), .obsFold, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\r\nX-Foo: bar\r\n\tbaz\r\n\r\n"), .obsFold, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\n Host: a\r\n\r\n"), .obsFold, status: 400)
    }

    func testNULInValueIsRejected() {
        assertWireError(try request(withField("X-Foo: a\u{0}b")), .badHeaderValue, status: 400)
    }

    func testBareCRInValueIsRejected() {
        assertWireError(try request(withField("X-Foo: a\rb")), .bareCR, status: 400)
        assertWireError(try request(withField("X-Foo: a\r")), .bareCR, status: 400)
    }

    func testBareLFInFieldSectionIsRejected() {
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\nX-Foo: b\r\n\r\n"), .bareLF, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\r\n\n"), .bareLF, status: 400)
        assertWireError(try parseOnly("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n"), .bareLF, status: 400)
    }

    func testOtherControlBytesInValueAreRejected() {
        for ctl: UInt8 in [0x01, 0x08, 0x0B, 0x0C, 0x1B, 0x1F, 0x7F] {
            let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\nX-Foo: a".utf8) + [ctl] + Array("b\r\n\r\n".utf8)
            assertWireError(try request(bytes: bytes), .badHeaderValue, status: 400, "byte \(ctl)")
        }
    }

    func testHTabAndObsTextInValueAreAllowed() throws {
        let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\nX-Foo: a\tb ".utf8) + [0x80, 0xFF, 0xC3, 0xA9] + Array("\r\n\r\n".utf8)
        let head = try request(bytes: bytes)
        head.headers.withValueBytes(at: 1) { value in
            XCTAssertEqual(Array(value), Array("a\tb ".utf8) + [0x80, 0xFF, 0xC3, 0xA9])
        }
    }

    func testNameMustBeANonEmptyToken() {
        assertWireError(try request(withField(": bar")), .badHeaderName, status: 400)
        assertWireError(try request(withField("X(Foo): bar")), .badHeaderName, status: 400)
        assertWireError(try request(withField("X Foo: bar")), .badHeaderName, status: 400)
        assertWireError(try request(withField("X\"Foo\": bar")), .badHeaderName, status: 400)
        assertWireError(try request(bytes: Array("GET / HTTP/1.1\r\nHost: a\r\nX".utf8) + [0xC3, 0xA9] + Array(": b\r\n\r\n".utf8)),
                        .badHeaderName, status: 400)
    }

    func testLineWithoutColonIsRejected() {
        assertWireError(try request(withField("X-Foo")), .missingColon, status: 400)
        assertWireError(try request(withField("X-Foo bar")), .missingColon, status: 400)
    }

    func testValuesAreTrimmedAndNamesKeepCase() throws {
        let head = try request(withField("X-MiXed:  \t a  b \t "))
        XCTAssertEqual(head.headers.name(at: 1), "X-MiXed")
        XCTAssertEqual(head.headers.value(at: 1), "a  b")
        XCTAssertEqual(head.headers.first(name: "x-mixed"), "a  b")
        XCTAssertEqual(try request(withField("X-Empty:")).headers.value(at: 1), "")
    }

    func testMoreFieldsThanTheLimitIs431() throws {
        let limits = WireLimits(headerCount: 3)
        let three = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n"
        XCTAssertEqual(try request(three, limits: limits).headers.count, 3)
        let four = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        assertWireError(try request(four, limits: limits), .tooManyHeaders, status: 431)
    }

    func testDefaultFieldCountLimitIs100() throws {
        let fields = (1...99).map { "X-\($0): v\r\n" }.joined()
        XCTAssertEqual(try request("GET / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n").headers.count, 100)
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\r\n\(fields)X-Last: v\r\n\r\n"), .tooManyHeaders, status: 431)
    }

    func testHeadLargerThanTheLimitIs431() throws {
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: \(String(repeating: "p", count: 40))\r\n\r\n"
        XCTAssertNoThrow(try request(head, limits: WireLimits(headerBytes: head.utf8.count)))
        assertWireError(try request(head, limits: WireLimits(headerBytes: head.utf8.count - 1)), .headersTooLarge, status: 431)
        assertWireError(try parseOnly(head, limits: WireLimits(headerBytes: head.utf8.count - 1)), .headersTooLarge, status: 431)
    }

    func testKnownFieldsAreClassified() throws {
        let head = try request("POST / HTTP/1.1\r\nhOsT: a\r\ncontent-LENGTH: 0\r\nTE: trailers\r\nProxy-Authorization: x\r\nX: y\r\n\r\n")
        XCTAssertEqual((0..<5).map { head.headers.known(at: $0) }, [.host, .contentLength, .te, .proxyAuthorization, .other])
        XCTAssertEqual(KnownField(name: "Transfer-Encoding"), .transferEncoding)
        XCTAssertEqual(KnownField(name: "Transfer-Encodings"), .other)
        XCTAssertEqual(KnownField(name: "x-REQUEST-id"), .requestID)
        XCTAssertEqual(KnownField(name: "Content-Type"), .contentType, "same length as X-Request-Id")
        XCTAssertEqual(KnownField(name: "X-Request-Ix"), .other)
    }
}
