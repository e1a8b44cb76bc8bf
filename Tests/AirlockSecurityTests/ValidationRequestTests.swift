import AirlockSecurity
import XCTest

/// `validations(for:)`: exactly the X509 verifications each configuration needs, in order.
final class ValidationRequestTests: XCTestCase {
    private let host = "upstream.internal"
    private var byDefault: ValidationRequest { ValidationRequest(anchors: .defaultTrust, hostname: host) }
    private var byPinned: ValidationRequest { ValidationRequest(anchors: .pinnedCertificates, hostname: host) }

    func testNoneValidatesAgainstDefaultTrust() throws {
        XCTAssertEqual(SecurityPolicy.default.validations(for: host), [byDefault])
        XCTAssertEqual(
            try SecurityPolicy(mode: .none, validatesDomainName: false).validations(for: host),
            [ValidationRequest(anchors: .defaultTrust, hostname: nil)]
        )
    }

    func testPublicKeyValidatesAgainstDefaultTrustUnlessAllowInvalid() throws {
        let pins = [Fixtures.leafA.pin]
        XCTAssertEqual(try Fixtures.publicKeyPolicy(pins).validations(for: host), [byDefault])
        XCTAssertEqual(
            try Fixtures.publicKeyPolicy(pins, validatesDomainName: false).validations(for: host),
            [ValidationRequest(anchors: .defaultTrust, hostname: nil)]
        )
        // Without validation only the security level of the presented chain is checked (no name, no anchor).
        let levelOnly = [ValidationRequest(anchors: .presentedChain, hostname: nil)]
        XCTAssertEqual(try Fixtures.publicKeyPolicy(pins, allowInvalid: true).validations(for: host), levelOnly)
        XCTAssertEqual(try Fixtures.publicKeyPolicy(pins, allowInvalid: true, validatesDomainName: false).validations(for: host),
                       levelOnly)
    }

    func testCertificateValidatesAgainstDefaultTrustThenThePinnedAnchors() throws {
        let roots = [Fixtures.rootA]
        XCTAssertEqual(try Fixtures.certificatePolicy(roots).validations(for: host), [byDefault, byPinned])
        XCTAssertEqual(
            try Fixtures.certificatePolicy(roots, validatesDomainName: false).validations(for: host),
            [ValidationRequest(anchors: .defaultTrust, hostname: nil), ValidationRequest(anchors: .pinnedCertificates, hostname: nil)]
        )
        XCTAssertEqual(try Fixtures.certificatePolicy(roots, allowInvalid: true).validations(for: host), [byPinned])
        XCTAssertEqual(
            try Fixtures.certificatePolicy(roots, allowInvalid: true, validatesDomainName: false).validations(for: host),
            [ValidationRequest(anchors: .pinnedCertificates, hostname: nil)]
        )
    }

    func testTheHostIsPassedThroughVerbatim() {
        XCTAssertEqual(SecurityPolicy.default.validations(for: "127.0.0.1").map(\.hostname), ["127.0.0.1"])
    }
}
