import AirlockWire
import XCTest

/// CONNECT's authority-form target (RFC 9110 9.3.6, RFC 9112 3.2.3), parsed strictly with no
/// sockets: what becomes a tunnel's `host:port`, and every malformed shape refused with
/// `invalid-connect-target` (400) before any route or upstream is looked at.
final class ConnectTargetTests: XCTestCase {
    private func connect(_ target: String, host: String = "h") throws -> RequestHead {
        try request("CONNECT \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
    }

    func testAcceptedTargets() throws {
        let cases: [(String, String, UInt16)] = [
            ("example.com:443", "example.com", 443),
            ("Example.COM:443", "example.com", 443),
            ("a-b.c_d~e.test:1", "a-b.c_d~e.test", 1),
            ("localhost:65535", "localhost", 65535),
            ("127.0.0.1:8443", "127.0.0.1", 8443),
            ("[::1]:443", "[::1]", 443),
            ("[2001:DB8::1]:00443", "[2001:db8::1]", 443),
            ("[::ffff:192.0.2.1]:443", "[::ffff:192.0.2.1]", 443),
        ]
        for (text, host, port) in cases {
            let head = try connect(text)
            XCTAssertEqual(head.method, .connect, text)
            XCTAssertEqual(head.target, .authority(host: host, port: port), text)
            XCTAssertEqual(head.host, host, "the target's authority wins over Host: \(text)")
            XCTAssertEqual(head.port, port, text)
        }
    }

    func testMalformedTargetsAreInvalidConnectTarget() {
        let cases: [(String, String)] = [
            ("example.com", "no port"),
            ("example.com:", "empty port"),
            ("example.com:0", "port 0"),
            ("example.com:65536", "port over 65535"),
            ("example.com:99999", "port over 65535"),
            ("example.com:123456", "six digits"),
            ("example.com:44a", "non-digit in port"),
            ("example.com:+443", "sign in port"),
            ("example.com:-1", "negative port"),
            ("example.com:4%343", "percent in port"),
            ("user@example.com:443", "userinfo"),
            ("user:pw@example.com:443", "userinfo with password"),
            ("example.com:443/", "path"),
            ("example.com:443/x", "path"),
            ("example.com:443?q", "query"),
            ("example.com:443#f", "fragment"),
            ("/", "origin-form"),
            ("*", "asterisk-form"),
            ("https://example.com:443", "absolute-form"),
            ("https://example.com:443/", "absolute-form"),
            ("::1:443", "IPv6 without brackets"),
            ("2001:db8::1:443", "IPv6 without brackets"),
            ("[::1]", "IPv6 without port"),
            ("[::1]443", "junk after the IP literal"),
            ("[::1:443", "unclosed bracket"),
            ("[fe80::1%25eth0]:443", "zone id"),
            ("[1.2.3.4]:443", "IPv4 in brackets"),
            (":443", "empty host"),
            ("[]:443", "empty IP literal"),
            ("exa mple.com:443", "space"),   // a third space: the request line itself is bad
            ("exa%6Dple.com:443", "percent-encoded host"),
            ("example.com:443:443", "two ports"),
            (String(repeating: "a", count: 256) + ":443", "host longer than 255 bytes"),
        ]
        for (text, why) in cases {
            do {
                let head = try connect(text)
                XCTFail("\(why): accepted \(text) as \(head.target)")
            } catch let e as WireError {
                XCTAssertEqual(e.status, 400, "\(why): \(text): \(e)")
                if text.contains(" ") {
                    XCTAssertEqual(e.code, .badRequestLine, "\(why): \(text): \(e)")
                } else {
                    XCTAssertEqual(e.code, .invalidConnectTarget, "\(why): \(text): \(e)")
                    XCTAssertEqual(e.reason, "invalid-connect-target")
                }
            } catch {
                XCTFail("\(why): \(text): \(error)")
            }
        }
    }

    /// The detail says what is wrong (it ends up in the 400's JSON message).
    func testDetailNamesTheProblem() {
        func detail(_ t: String) -> String {
            do { _ = try connect(t); return "" } catch let e as WireError { return e.detail } catch { return "\(error)" }
        }
        XCTAssertTrue(detail("example.com").contains("port required"), detail("example.com"))
        XCTAssertTrue(detail("example.com:0").contains("port out of range"), detail("example.com:0"))
        XCTAssertTrue(detail("u@example.com:443").contains("userinfo"), detail("u@example.com:443"))
        XCTAssertTrue(detail(":443").contains("empty host"), detail(":443"))
    }

    /// Authority-form belongs to CONNECT alone; other methods keep `bad-target`.
    func testOtherMethodsKeepBadTarget() {
        assertWireError(try request("GET example.com:443 HTTP/1.1\r\nHost: h\r\n\r\n"), .badTarget, status: 400)
    }
}
