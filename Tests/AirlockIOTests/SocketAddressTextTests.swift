import AirlockIO
import AirlockWire
import XCTest

/// `append(to:)` writes `description`'s bytes (what access records print).
final class SocketAddressTextTests: XCTestCase {
    func testAppendDescriptionMatchesDescription() throws {
        let cases: [(String, UInt16)] = [
            ("0.0.0.0", 0), ("127.0.0.1", 1), ("10.0.12.3", 8080), ("192.168.100.254", 65_535),
            ("255.255.255.255", 443), ("1.22.103.9", 80), ("::1", 8443), ("::ffff:127.0.0.1", 9), ("2001:db8::17", 50_000),
        ]
        for (host, port) in cases {
            let address = try XCTUnwrap(SocketAddress(ipLiteral: host, port: port), host)
            let out = TextBuilder.withBytes(capacity: 64, {
                $0.append("x")
                address.append(to: &$0)
            }) { String(decoding: $0, as: UTF8.self) }
            XCTAssertEqual(out, "x" + address.description, host)
        }
    }

    /// Every octet and port width, generated (seeded): the digits written right to left in a
    /// stack buffer say what inet_ntop says, for each of them.
    func testAppendDescriptionMatchesDescriptionForGeneratedIPv4() throws {
        var seed: UInt64 = 0x9E3779B97F4A7C15
        func next() -> UInt64 {
            seed ^= seed << 13
            seed ^= seed >> 7
            seed ^= seed << 17
            return seed
        }
        let widths: [UInt64] = [10, 100, 256]   // one-, two- and three-digit octets
        for n in 0..<3000 {
            let octets = (0..<4).map { k in String(next() % widths[(n + k) % 3]) }
            let port = UInt16(truncatingIfNeeded: next() % [10, 1000, 65_536][n % 3])
            let host = octets.joined(separator: ".")
            let address = try XCTUnwrap(SocketAddress(ipLiteral: host, port: port), host)
            let out = TextBuilder.withBytes(capacity: 64, { address.append(to: &$0) }) { String(decoding: $0, as: UTF8.self) }
            XCTAssertEqual(out, "\(host):\(port)")
            XCTAssertEqual(out, address.description)
        }
    }
}
