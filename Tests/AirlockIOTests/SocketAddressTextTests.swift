import AirlockIO
import XCTest

/// `appendDescription` writes `description`'s bytes (what access records print).
final class SocketAddressTextTests: XCTestCase {
    func testAppendDescriptionMatchesDescription() throws {
        let cases: [(String, UInt16)] = [
            ("0.0.0.0", 0), ("127.0.0.1", 1), ("10.0.12.3", 8080), ("192.168.100.254", 65_535),
            ("255.255.255.255", 443), ("1.22.103.9", 80), ("::1", 8443), ("::ffff:127.0.0.1", 9), ("2001:db8::17", 50_000),
        ]
        for (host, port) in cases {
            let address = try XCTUnwrap(SocketAddress(ipLiteral: host, port: port), host)
            var out: [UInt8] = Array("x".utf8)
            address.appendDescription(to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), "x" + address.description, host)
        }
    }
}
