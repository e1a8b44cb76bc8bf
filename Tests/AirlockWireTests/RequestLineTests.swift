import AirlockWire
import XCTest

/// `method SP target SP version CRLF`, the version rules and the request-line limit.
final class RequestLineTests: XCTestCase {
    func testGetOriginForm() throws {
        let head = try request("GET /a/b?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
        XCTAssertEqual(head.method, .get)
        XCTAssertEqual(head.target, .origin(path: "/a/b?q=1"))
        XCTAssertEqual(head.version, .http11)
        XCTAssertEqual(head.host, "example.com")
        XCTAssertNil(head.port)
        XCTAssertEqual(head.framing, .none)
        XCTAssertTrue(head.keepAlive)
        XCTAssertFalse(head.expectsContinue)
        XCTAssertEqual(head.headers.count, 2)
        XCTAssertEqual(head.headers.first(name: "accept"), "*/*")
    }

    func testOneLeadingEmptyLineIsAllowed() throws {
        let head = try request("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(head.target, .origin(path: "/"))
    }

    func testTwoLeadingEmptyLinesAreRejected() {
        assertWireError(try request("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
        assertWireError(try parseOnly("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testDoubleSpaceIsRejected() {
        assertWireError(try request("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
        assertWireError(try request("GET /  HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testTabSeparatorIsRejected() {
        assertWireError(try request("GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
        assertWireError(try request("GET /\tHTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testLeadingSpaceIsRejected() {
        assertWireError(try request(" GET / HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testTrailingSpaceIsRejected() {
        assertWireError(try request("GET / HTTP/1.1 \r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testMissingPartsAreRejected() {
        assertWireError(try request("GET /\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
        assertWireError(try request("GET / \r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
        assertWireError(try request("GET\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testBareLFEndingRequestLineIsRejected() {
        assertWireError(try request("GET / HTTP/1.1\nHost: a\r\n\r\n"), .bareLF, status: 400)
        assertWireError(try parseOnly("GET / HTTP/1.1\nHost: a\r\n\r\n"), .bareLF, status: 400)
    }

    func testBareCRInRequestLineIsRejected() {
        assertWireError(try request("GET /\r HTTP/1.1\r\nHost: a\r\n\r\n"), .bareCR, status: 400)
    }

    func testControlByteInRequestLineIsRejected() {
        assertWireError(try request("GET /\u{0} HTTP/1.1\r\nHost: a\r\n\r\n"), .badRequestLine, status: 400)
    }

    func testMethodMustBeAToken() {
        assertWireError(try request("GE(T / HTTP/1.1\r\nHost: a\r\n\r\n"), .badMethod, status: 400)
        assertWireError(try request("G\"ET / HTTP/1.1\r\nHost: a\r\n\r\n"), .badMethod, status: 400)
        assertWireError(try request(bytes: Array("G".utf8) + [0xC3, 0xA9] + Array(" / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)),
                        .badMethod, status: 400)
    }

    /// `isGet` and `isGetOrHead` (the cache's questions, by pattern) agree with `==` for every
    /// method, and a token that only spells like one (`.other`) is not it.
    func testTheCachesMethodPredicatesAgreeWithEquality() {
        let all: [Method] = [.get, .head, .post, .put, .delete, .options, .patch, .trace, .connect,
                             .other("GET"), .other("HEAD"), .other("get"), .other("PURGE")]
        for m in all {
            XCTAssertEqual(m.isGet, m == .get, "\(m)")
            XCTAssertEqual(m.isGetOrHead, m == .get || m == .head, "\(m)")
        }
        XCTAssertEqual(all.filter(\.isGetOrHead).count, 2)
    }

    func testMethodsAreCaseSensitiveTokens() throws {
        XCTAssertEqual(try request("get / HTTP/1.1\r\nHost: a\r\n\r\n").method, .other("get"))
        XCTAssertEqual(try request("PURGE / HTTP/1.1\r\nHost: a\r\n\r\n").method, .other("PURGE"))
        XCTAssertEqual(try request("DELETE / HTTP/1.1\r\nHost: a\r\n\r\n").method, .delete)
        XCTAssertEqual(Method(name: "PATCH"), .patch)
        XCTAssertEqual(Method.other("X").name, "X")
    }

    func testUnsupportedVersionsAre505() {
        for version in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"] {
            assertWireError(try request("GET / \(version)\r\nHost: a\r\n\r\n"), .unsupportedVersion, status: 505, version)
        }
    }

    func testMalformedVersionsAre400() {
        for version in ["HTTP/1", "http/1.1", "HTTP/1.1x", "HTTP/11.1", "HTTP/1.", "HTTP 1.1", "HTTP/a.b", "HTTPS/1.1"] {
            assertWireError(try request("GET / \(version)\r\nHost: a\r\n\r\n"), version.contains(" ") ? .badRequestLine : .badVersion,
                            status: 400, version)
        }
    }

    func testRequestLineOverLimitIs414() {
        let limits = WireLimits(requestLineBytes: 32)
        let atLimit = "GET /" + String(repeating: "a", count: 32 - 14) + " HTTP/1.1"
        XCTAssertEqual(atLimit.utf8.count, 32)
        XCTAssertNoThrow(try request(atLimit + "\r\nHost: a\r\n\r\n", limits: limits))
        let over = "GET /" + String(repeating: "a", count: 32 - 13) + " HTTP/1.1"
        assertWireError(try request(over + "\r\nHost: a\r\n\r\n", limits: limits), .requestLineTooLong, status: 414)
        assertWireError(try parseOnly(over + "\r\nHost: a\r\n\r\n", limits: limits), .requestLineTooLong, status: 414)
    }

    func testHTTP10RequestWithoutHost() throws {
        let head = try request("GET /x HTTP/1.0\r\n\r\n")
        XCTAssertEqual(head.version, .http10)
        XCTAssertEqual(head.host, "")
        XCTAssertFalse(head.keepAlive)
    }

    func testKeepAliveRules() throws {
        XCTAssertTrue(try request("GET / HTTP/1.1\r\nHost: a\r\n\r\n").keepAlive)
        XCTAssertFalse(try request("GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n").keepAlive)
        XCTAssertFalse(try request("GET / HTTP/1.1\r\nHost: a\r\nConnection: x-foo, close\r\n\r\n").keepAlive)
        XCTAssertFalse(try request("GET / HTTP/1.0\r\n\r\n").keepAlive)
        XCTAssertTrue(try request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive)
    }

    func testExpectContinue() throws {
        let head = try request("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n")
        XCTAssertTrue(head.expectsContinue)
        XCTAssertEqual(head.method, .put)
        XCTAssertFalse(try request("PUT /u HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n").expectsContinue)
    }

    func testParserRefusesBytesAfterTheHead() {
        assertWireError(try parseOnly("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET"), .incompleteHead)
        assertWireError(try parseOnly("GET / HTTP/1.1\r\nHost: a\r\n"), .incompleteHead)
    }
}
