import AirlockWire
import XCTest

/// RFC 4291 2.2 text, read once for the wire parser and the egress policy (`IPv6Text`).
final class IPv6TextTests: XCTestCase {
    func testTheTextFormsOfRFC4291ReadToTheirSixteenBytes() {
        let cases: [(String, [UInt8])] = [
            ("::", Array(repeating: 0, count: 16)),
            ("::1", Array(repeating: 0, count: 15) + [1]),
            ("fe80::1", [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]),
            ("2001:DB8:0:0:8:800:200C:417A", [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 8, 8, 0, 0x20, 0x0c, 0x41, 0x7a]),
            ("::ffff:192.0.2.1", Array(repeating: 0, count: 10) + [0xff, 0xff, 192, 0, 2, 1]),
            ("1:2:3:4:5:6:1.2.3.4", [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 1, 2, 3, 4]),
            ("1::", [0, 1] + Array(repeating: 0, count: 14)),
        ]
        for (text, bytes) in cases {
            XCTAssertEqual(IPv6Text.parse(text), bytes, text)
        }
    }

    func testAnythingElseIsNotAnAddress() {
        for text in ["", ":", ":1", "1:", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "::g",
                     "1:2:3:4:5:6:7:1.2.3.4", "::1.2.3", "::01.2.3.4", "fe80::1%eth0", "[::1]", "::1 ", "1.2.3.4"] {
            XCTAssertNil(IPv6Text.parse(text), text)
        }
    }
}
