import AirlockWire
import XCTest

/// Host rules (RFC 9112 3.2) and the effective authority.
final class HostTests: XCTestCase {
    func testMissingHostInHTTP11Is400() {
        assertWireError(try request("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"), .missingHost, status: 400)
        assertWireError(try request("GET http://a/ HTTP/1.1\r\n\r\n"), .missingHost, status: 400)
    }

    func testTwoHostFieldsAre400() {
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), .duplicateHost, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), .duplicateHost, status: 400)
        assertWireError(try request("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"), .duplicateHost, status: 400)
        assertWireError(try request("GET http://t/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), .duplicateHost, status: 400)
    }

    func testEmptyHostInHTTP11OriginFormIs400() {
        assertWireError(try request("GET / HTTP/1.1\r\nHost:\r\n\r\n"), .badHost, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\nHost:  \r\n\r\n"), .badHost, status: 400)
    }

    func testHostWithBadCharactersIs400() {
        for bad in ["a b", "a,b", "a/b", "a?b", "a%2eb", "a;b", "a\"b", "[::1", "[::z]", "a]"] {
            assertWireError(try request("GET / HTTP/1.1\r\nHost: \(bad)\r\n\r\n"), .badHost, status: 400, bad)
        }
        assertWireError(try request(bytes: Array("GET / HTTP/1.1\r\nHost: ex".utf8) + [0xC3, 0xA9] + Array("\r\n\r\n".utf8)),
                        .badHost, status: 400)
    }

    func testHostWithUserinfoIs400() {
        assertWireError(try request("GET / HTTP/1.1\r\nHost: user@a\r\n\r\n"), .badHost, status: 400)
        assertWireError(try request("GET / HTTP/1.1\r\nHost: user:pw@a:80\r\n\r\n"), .badHost, status: 400)
    }

    func testHostWithBadPortIs400() {
        for bad in ["a:", "a:0", "a:65536", "a:8o", "a:80:80", "a: 80", "[::1]:", "[::1]:x"] {
            assertWireError(try request("GET / HTTP/1.1\r\nHost: \(bad)\r\n\r\n"), .badHost, status: 400, bad)
        }
    }

    func testHostIsLowercasedWithPort() throws {
        let head = try request("GET / HTTP/1.1\r\nHost: WWW.Example.COM:8080\r\n\r\n")
        XCTAssertEqual(head.host, "www.example.com")
        XCTAssertEqual(head.port, 8080)
        XCTAssertEqual(head.headers.first(.host), "WWW.Example.COM:8080", "the field itself is kept as received")
    }

    func testIPHosts() throws {
        let v6 = try request("GET / HTTP/1.1\r\nHost: [2001:DB8::1]:443\r\n\r\n")
        XCTAssertEqual(v6.host, "[2001:db8::1]")
        XCTAssertEqual(v6.port, 443)
        XCTAssertEqual(try request("GET / HTTP/1.1\r\nHost: 192.0.2.7\r\n\r\n").host, "192.0.2.7")
    }

    func testAbsoluteFormTargetWinsOverDifferingHost() throws {
        let head = try request("GET http://Target.test:8080/p?q HTTP/1.1\r\nHost: other.test:9090\r\n\r\n")
        XCTAssertEqual(head.target, .absolute(scheme: .http, host: "target.test", port: 8080, path: "/p?q"))
        XCTAssertEqual(head.host, "target.test")
        XCTAssertEqual(head.port, 8080)
        let noPort = try request("GET https://target.test/ HTTP/1.1\r\nHost: other.test:9090\r\n\r\n")
        XCTAssertEqual(noPort.host, "target.test")
        XCTAssertNil(noPort.port)
    }

    func testAbsoluteFormAllowsEmptyHostField() throws {
        XCTAssertEqual(try request("GET http://t.test/ HTTP/1.1\r\nHost:\r\n\r\n").host, "t.test")
    }

    func testAbsoluteFormStillRejectsInvalidHostField() {
        assertWireError(try request("GET http://t.test/ HTTP/1.1\r\nHost: a b\r\n\r\n"), .badHost, status: 400)
    }

    func testHTTP10EmptyHostIsAllowed() throws {
        XCTAssertEqual(try request("GET / HTTP/1.0\r\nHost:\r\n\r\n").host, "")
    }
}
