import AirlockSecurity
import XCTest

/// Addresses, ranges and the egress decision, with no socket: what a route may dial.
final class EgressPolicyTests: XCTestCase {
    private func ip(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> IPAddress {
        guard let a = IPAddress(parsing: text) else {
            XCTFail("\(text) did not parse", file: file, line: line)
            return IPAddress(high: 0, low: 0)
        }
        return a
    }

    private func cidr(_ text: String) throws -> CIDR { try CIDR(parsing: text) }

    // MARK: addresses

    func testIPv4MappedIPv6IsTheIPv4Address() {
        XCTAssertEqual(ip("::ffff:127.0.0.1"), ip("127.0.0.1"))
        XCTAssertEqual(ip("::ffff:7f00:1"), ip("127.0.0.1"))
        XCTAssertEqual(ip("0:0:0:0:0:ffff:a9fe:a9fe"), ip("169.254.169.254"))
        XCTAssertEqual(IPAddress(bytes: [127, 0, 0, 1]), ip("127.0.0.1"))
        XCTAssertEqual(IPAddress(bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1]), ip("10.0.0.1"))
        XCTAssertTrue(ip("::ffff:10.0.0.1").isIPv4)
        XCTAssertFalse(ip("::1").isIPv4)
        XCTAssertEqual(ip("::ffff:10.0.0.1").description, "10.0.0.1")
    }

    func testOnlyPlainTextAddressesParse() {
        for bad in ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "1.2.3.4.", "1.2.3.256", "1.2.3",
                    "", ":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "fe80::1%eth0", "[::1]", "::1:",
                    "1.2.3.4/8", "g::1", " 1.2.3.4"] {
            XCTAssertNil(IPAddress(parsing: bad), bad)
        }
        XCTAssertEqual(ip("1:2:3:4:5:6:7:8").description, "1:2:3:4:5:6:7:8")
        XCTAssertEqual(ip("2001:DB8:0:0:0:0:0:1").description, "2001:db8::1")
        XCTAssertEqual(ip("::").description, "::")
        XCTAssertEqual(ip("fe80::").description, "fe80::")
        XCTAssertEqual(ip("1:0:0:2:0:0:0:3").description, "1:0:0:2::3")
        XCTAssertEqual(ip("64:ff9b::192.0.2.1").description, "64:ff9b::c000:201")
    }

    // MARK: ranges

    func testRangesMatchTheirPrefixOnly() throws {
        let ten = try cidr("10.0.0.0/8")
        XCTAssertTrue(ten.contains(ip("10.255.1.2")))
        XCTAssertTrue(ten.contains(ip("::ffff:10.1.1.1")), "the IPv4-mapped spelling is the same address")
        XCTAssertFalse(ten.contains(ip("11.0.0.0")))
        XCTAssertFalse(ten.contains(ip("::a00:1")), "an IPv4-compatible address is not IPv4")
        let one = try cidr("192.168.1.7")
        XCTAssertTrue(one.contains(ip("192.168.1.7")))
        XCTAssertFalse(one.contains(ip("192.168.1.8")))
        XCTAssertEqual(one.description, "192.168.1.7/32")
        let ula = try cidr("fc00::/7")
        XCTAssertTrue(ula.contains(ip("fd12:3456::1")))
        XCTAssertFalse(ula.contains(ip("fe00::1")))
        XCTAssertEqual(ula.description, "fc00::/7")
        XCTAssertTrue(try cidr("0.0.0.0/0").contains(ip("8.8.8.8")))
        XCTAssertFalse(try cidr("0.0.0.0/0").contains(ip("2001:db8::1")), "an IPv4 /0 is all of IPv4, not IPv6")
        XCTAssertTrue(try cidr("::/0").contains(ip("8.8.8.8")))
    }

    func testBadRangesAreRefusedNamingTheKey() {
        for bad in ["10.0.0.0/33", "10.1.0.0/8", "fc00::/129", "localhost", "10.0.0.0/", "10.0.0.0/+8", "10.0.0.0/08x",
                    "127.1/32", "fd00::1/7"] {
            XCTAssertThrowsError(try CIDR(parsing: bad), bad) { error in
                XCTAssertEqual((error as? SecurityConfigError)?.key, "egress", bad)
            }
        }
    }

    // MARK: the decision

    private let everyClass: [(String, EgressPolicy.Reason)] = [
        ("127.0.0.1", .loopback), ("127.255.255.254", .loopback), ("::1", .loopback), ("::ffff:127.0.0.1", .loopback),
        ("10.0.0.1", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
        ("192.168.0.1", .privateNetwork), ("::ffff:192.168.1.1", .privateNetwork),
        ("100.64.0.1", .sharedAddressSpace), ("100.127.255.255", .sharedAddressSpace),
        ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal), ("::ffff:169.254.169.254", .linkLocal),
        ("fc00::1", .uniqueLocal), ("fd00:ec2::254", .uniqueLocal),
        ("224.0.0.1", .multicast), ("239.255.255.250", .multicast), ("ff02::1", .multicast),
        ("255.255.255.255", .reserved), ("240.0.0.1", .reserved),
    ]

    func testInternalClassesAreDeniedWhenInternalIsDenied() {
        let policy = EgressPolicy(denyInternal: true)
        for (text, reason) in everyClass {
            XCTAssertEqual(policy.evaluate(ip(text)), .denied(reason), text)
        }
        for text in ["8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255", "2001:db8::1",
                     "2606:4700::1111", "fe00::1", "11.0.0.1", "192.169.0.1"] {
            XCTAssertEqual(policy.evaluate(ip(text)), .allowed, text)
        }
    }

    func testTheDefaultPolicyAllowsEverythingButUnspecified() {
        let policy = EgressPolicy()
        XCTAssertTrue(policy.allowsAllDialable)
        for (text, _) in everyClass { XCTAssertEqual(policy.evaluate(ip(text)), .allowed, text) }
    }

    func testUnspecifiedIsNeverDialledWhateverTheListsSay() throws {
        let policy = EgressPolicy(allow: [try cidr("0.0.0.0/0"), try cidr("::/0")])
        for text in ["0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"] {
            XCTAssertEqual(policy.evaluate(ip(text)), .denied(.unspecified), text)
            XCTAssertEqual(EgressPolicy().evaluate(ip(text)), .denied(.unspecified), text)
        }
        XCTAssertEqual(policy.evaluate(ip("::2")), .allowed, "only :: itself, not its neighbours")
    }

    func testAllowOpensAClassAndTheLongestPrefixDecides() throws {
        let policy = EgressPolicy(allow: [try cidr("10.0.0.0/8"), try cidr("10.1.2.3")],
                                  deny: [try cidr("10.1.0.0/16"), try cidr("8.8.8.8")], denyInternal: true)
        XCTAssertEqual(policy.evaluate(ip("10.9.9.9")), .allowed, "the /8 allow opens the private class")
        XCTAssertEqual(policy.evaluate(ip("10.1.9.9")), .denied(.denyList), "the /16 deny is more specific")
        XCTAssertEqual(policy.evaluate(ip("10.1.2.3")), .allowed, "the /32 allow is more specific still")
        XCTAssertEqual(policy.evaluate(ip("8.8.8.8")), .denied(.denyList), "deny reaches public addresses too")
        XCTAssertEqual(policy.evaluate(ip("192.168.0.1")), .denied(.privateNetwork), "other classes stay denied")
        XCTAssertEqual(policy.evaluate(ip("::ffff:10.1.2.3")), .allowed, "mapped spelling, same answer")
        XCTAssertEqual(policy.evaluate(ip("::ffff:10.1.9.9")), .denied(.denyList))
    }

    func testDenyWinsATieAndAppliesWithoutTheInternalClasses() throws {
        let policy = EgressPolicy(allow: [try cidr("192.168.0.0/16")], deny: [try cidr("192.168.0.0/16")])
        XCTAssertEqual(policy.evaluate(ip("192.168.3.3")), .denied(.denyList))
        let loopbackOnly = EgressPolicy(deny: [try cidr("127.0.0.0/8"), try cidr("::1")])
        XCTAssertFalse(loopbackOnly.allowsAllDialable)
        XCTAssertEqual(loopbackOnly.evaluate(ip("127.0.0.1")), .denied(.denyList))
        XCTAssertEqual(loopbackOnly.evaluate(ip("::1")), .denied(.denyList))
        XCTAssertEqual(loopbackOnly.evaluate(ip("10.0.0.1")), .allowed)
    }
}
