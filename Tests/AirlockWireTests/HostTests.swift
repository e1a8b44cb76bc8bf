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

    /// Hosts that browsers and curl read as IPv4 addresses (WHATWG "ends in a number") must be
    /// four plain decimal parts: `0177.0.0.1` is 127.0.0.1 to a browser and 177.0.0.1 to
    /// inet_aton-less code. Refused in the Host field, absolute-form and CONNECT alike.
    func testNumericHostsThatAreNotDottedQuadsAreInvalidHost() {
        let numeric = ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.0.0.1.", "1.2.3.4.5",
                       "127.0.0.01", "1.2.3.256", "0x", "0X7F.0.0.1", "example.123", "foo.0x1f", "127.0.1", "00"]
        for host in numeric {
            assertWireError(try request("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n"), .invalidHost, status: 400, host)
            assertWireError(try request("GET http://\(host):8080/ HTTP/1.1\r\nHost: x\r\n\r\n"), .invalidHost,
                            status: 400, host)
            assertWireError(try request("CONNECT \(host):443 HTTP/1.1\r\nHost: x\r\n\r\n"), .invalidHost,
                            status: 400, host)
        }
    }

    func testNamesWithDigitsAndPlainAddressesStillParse() throws {
        for host in ["127.0.0.1", "10.0.0.255", "0.0.0.0", "1password.com", "123.example", "a1.b2", "0x.test",
                     "x0x1", "v1.0x1g", "example.com.", "[::ffff:127.0.0.1]"] {
            XCTAssertEqual(try request("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n").host, host.lowercased(), host)
            XCTAssertEqual(try request("CONNECT \(host):443 HTTP/1.1\r\nHost: x\r\n\r\n").host, host.lowercased(), host)
        }
    }
}
