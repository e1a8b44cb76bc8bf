import AirlockWire
import XCTest

/// Origin-, absolute-, authority- and asterisk-form targets (RFC 9112 3.2).
final class RequestTargetTests: XCTestCase {
    private func target(_ method: String, _ target: String) throws -> RequestTarget {
        try request("\(method) \(target) HTTP/1.1\r\nHost: h\r\n\r\n").target
    }

    func testOriginFormAcceptsURICharacters() throws {
        let path = "/a-b_c.d~e/!$&'()*+,;=:@/%7E%aF?x=/?&y=%20"
        XCTAssertEqual(try target("GET", path), .origin(path: path))
        XCTAssertEqual(try target("GET", "//double"), .origin(path: "//double"))
    }

    func testOriginFormRejectsNonURICharacters() {
        for bad in ["/a\"b", "/a<b", "/a>b", "/a\\b", "/a^b", "/a`b", "/a{b", "/a|b", "/a}b"] {
            assertWireError(try target("GET", bad), .badTarget, status: 400, bad)
        }
        assertWireError(try request(bytes: Array("GET /a".utf8) + [0xC3, 0xA9] + Array(" HTTP/1.1\r\nHost: h\r\n\r\n".utf8)),
                        .badTarget, status: 400)
    }

    func testOriginFormRejectsBadPercentEncoding() {
        for bad in ["/%", "/%4", "/%G1", "/%1G", "/a?%zz"] {
            assertWireError(try target("GET", bad), .badTarget, status: 400, bad)
        }
    }

    func testFragmentIsRejected() {
        assertWireError(try target("GET", "/a#frag"), .badTarget, status: 400)
        assertWireError(try target("GET", "http://h/a#frag"), .badTarget, status: 400)
        assertWireError(try target("GET", "http://h#frag"), .badTarget, status: 400)
    }

    func testGarbageTargetIsRejected() {
        for bad in ["a/b", "%2F", "?", "http:/x", "http//x", "://x", "1http://x/"] {
            assertWireError(try target("GET", bad), .badTarget, status: 400, bad)
        }
    }

    func testAbsoluteForm() throws {
        XCTAssertEqual(try target("GET", "http://Example.COM:8080/a?b=1"),
                       .absolute(scheme: .http, host: "example.com", port: 8080, path: "/a?b=1"))
        XCTAssertEqual(try target("GET", "HTTPS://x.test"), .absolute(scheme: .https, host: "x.test", port: nil, path: "/"))
        XCTAssertEqual(try target("GET", "http://x.test?q"), .absolute(scheme: .http, host: "x.test", port: nil, path: "/?q"))
        XCTAssertEqual(try target("GET", "http://[::1]:8080/"), .absolute(scheme: .http, host: "[::1]", port: 8080, path: "/"))
        XCTAssertEqual(try target("GET", "http://[2001:DB8::ffff:192.0.2.1]/"),
                       .absolute(scheme: .http, host: "[2001:db8::ffff:192.0.2.1]", port: nil, path: "/"))
    }

    func testAbsoluteFormRejectsOtherSchemes() {
        for bad in ["ftp://x/", "ws://x/", "httpx://x/", "file:///etc/passwd"] {
            assertWireError(try target("GET", bad), .badTarget, status: 400, bad)
        }
    }

    func testAbsoluteFormRejectsUserinfo() {
        assertWireError(try target("GET", "http://user@x/"), .badTarget, status: 400)
        assertWireError(try target("GET", "http://user:pw@x:80/"), .badTarget, status: 400)
        assertWireError(try target("GET", "http://good.test@evil.test/"), .badTarget, status: 400)
    }

    func testAbsoluteFormRejectsEmptyHost() {
        assertWireError(try target("GET", "http:///a"), .badTarget, status: 400)
        assertWireError(try target("GET", "http://:80/"), .badTarget, status: 400)
        assertWireError(try target("GET", "http://"), .badTarget, status: 400)
    }

    func testAbsoluteFormRejectsBadPorts() {
        for bad in ["http://x:0/", "http://x:65536/", "http://x:8a/", "http://x:/", "http://x:+80/", "http://x:-1/",
                    "http://x:123456/", "http://x:80:80/"] {
            assertWireError(try target("GET", bad), .badTarget, status: 400, bad)
        }
        XCTAssertNoThrow(try target("GET", "http://x:65535/"))
    }

    func testAbsoluteFormRejectsBadHosts() {
        for bad in ["http://a%2eb/", "http://a,b/", "http://[::g]/", "http://[1:2:3:4:5:6:7:8:9]/",
                    "http://[::1/", "http://[::1]x/", "http://[fe80::1%25eth0]/", "http://[1.2.3.4]/"] {
            assertWireError(try target("GET", bad), .badTarget, status: 400, bad)
        }
    }

    func testConnectRequiresAuthorityForm() throws {
        let head = try request("CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        XCTAssertEqual(head.target, .authority(host: "example.com", port: 443))
        XCTAssertEqual(head.host, "example.com")
        XCTAssertEqual(head.port, 443)
        XCTAssertEqual(try target("CONNECT", "[::1]:8443"), .authority(host: "[::1]", port: 8443))
        for bad in ["example.com", "/x", "http://example.com:443/", "example.com:443/", "user@example.com:443", "*"] {
            assertWireError(try target("CONNECT", bad), .invalidConnectTarget, status: 400, bad)
        }
    }

    func testAuthorityFormOnlyWithConnect() {
        assertWireError(try target("GET", "example.com:80"), .badTarget, status: 400)
        assertWireError(try target("POST", "example.com:443"), .badTarget, status: 400)
    }

    func testAsteriskOnlyWithOptions() throws {
        XCTAssertEqual(try target("OPTIONS", "*"), .asterisk)
        assertWireError(try target("GET", "*"), .badTarget, status: 400)
        assertWireError(try target("OPTIONS", "**"), .badTarget, status: 400)
    }

    func testOriginFormText() {
        XCTAssertEqual(RequestTarget.absolute(scheme: .http, host: "h", port: 1, path: "/p?q").originFormText, "/p?q")
        XCTAssertEqual(RequestTarget.authority(host: "h", port: 443).originFormText, "h:443")
    }
}
