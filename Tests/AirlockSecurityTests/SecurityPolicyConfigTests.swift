import AirlockSecurity
import XCTest

/// Insecure or meaningless combinations are refused at load, each naming its key.
final class SecurityPolicyConfigTests: XCTestCase {
    private let pinA = Fixtures.leafA.pin
    private let pinB = Fixtures.rootA.pin

    private func assertRefused(
        _ key: String, containing words: String,
        file: StaticString = #filePath, line: UInt = #line,
        _ make: () throws -> SecurityPolicy
    ) {
        XCTAssertThrowsError(try make(), file: file, line: line) { error in
            guard let error = error as? SecurityConfigError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(error.key, key, error.message, file: file, line: line)
            XCTAssertTrue(error.message.contains(words), "\"\(error.message)\" lacks \"\(words)\"", file: file, line: line)
        }
    }

    func testAllowInvalidWithDomainValidationNeedsPinning() {
        // AFSecurityPolicy's rule: mode none, or pinning with nothing pinned.
        for mode in PinningMode.allCases {
            assertRefused("allow_invalid_certificates", containing: "you MUST use pinning") {
                try SecurityPolicy(mode: mode, allowInvalidCertificates: true, validatesDomainName: true)
            }
        }
        assertRefused("allow_invalid_certificates", containing: "you MUST use pinning") {
            try SecurityPolicy(mode: .none, pins: [self.pinA], allowInvalidCertificates: true, validatesDomainName: true)
        }
    }

    func testAllowInvalidWithoutPinningIsRefusedEvenWithoutDomainValidation() {
        assertRefused("allow_invalid_certificates", containing: "would trust any server") {
            try SecurityPolicy(mode: .none, allowInvalidCertificates: true, validatesDomainName: false)
        }
    }

    func testPinsWithModeNoneAreRefused() {
        assertRefused("pinning", containing: "would be ignored") {
            try SecurityPolicy(mode: .none, pins: [self.pinA])
        }
        assertRefused("pinning", containing: "would be ignored") {
            try SecurityPolicy(mode: .none, pinnedCertificates: [Fixtures.rootA.der], certificatePins: [Fixtures.rootA.pin])
        }
    }

    func testLeafScopeWithModeNoneIsRefused() {
        assertRefused("pin_scope", containing: "no effect") { try SecurityPolicy(mode: .none, pinScope: .leaf) }
    }

    func testPublicKeyModeNeedsPins() {
        assertRefused("pins", containing: "at least one pin") { try SecurityPolicy(mode: .publicKey) }
        assertRefused("pins", containing: "at least one pin") {
            try SecurityPolicy(mode: .publicKey, allowInvalidCertificates: true, validatesDomainName: false)
        }
    }

    func testCertificateModeNeedsCertificates() {
        assertRefused("certificates", containing: "at least one certificate") { try SecurityPolicy(mode: .certificate) }
    }

    func testCertificateModeRefusesPinsItWouldIgnore() {
        assertRefused("pins", containing: "would be ignored") {
            try SecurityPolicy(
                mode: .certificate, pins: [self.pinA], pinnedCertificates: [Fixtures.rootA.der], certificatePins: [Fixtures.rootA.pin]
            )
        }
    }

    func testCertificatesMustBeNonEmptyAndEachHaveItsPin() {
        assertRefused("certificates[1]", containing: "empty certificate") {
            try SecurityPolicy(mode: .certificate, pinnedCertificates: [Fixtures.rootA.der, []], certificatePins: [self.pinA, self.pinB])
        }
        assertRefused("certificates", containing: "1 public-key pins were derived from 2 certificates") {
            try SecurityPolicy(mode: .certificate, pinnedCertificates: [Fixtures.rootA.der, Fixtures.rootB.der], certificatePins: [self.pinA])
        }
        assertRefused("certificates", containing: "1 public-key pins were derived from 0 certificates") {
            try SecurityPolicy(mode: .publicKey, pins: [self.pinA], certificatePins: [self.pinB])
        }
    }

    func testSecureConfigurationsAreAccepted() throws {
        let none = try SecurityPolicy(mode: .none, validatesDomainName: false)
        XCTAssertEqual(none.mode, .none)
        XCTAssertFalse(none.validatesDomainName)

        // Self-signed upstream pinned by key: AFNetworking's sanctioned use of allow-invalid.
        let selfSigned = try SecurityPolicy(mode: .publicKey, pins: [pinA], allowInvalidCertificates: true, validatesDomainName: true)
        XCTAssertTrue(selfSigned.allowInvalidCertificates)
        XCTAssertEqual(selfSigned.pins, [pinA])

        // Pins may come only from certificates in public-key mode.
        let fromCertificates = try SecurityPolicy(
            mode: .publicKey, pinnedCertificates: [Fixtures.rootA.der], certificatePins: [Fixtures.rootA.pin], pinScope: .leaf
        )
        XCTAssertEqual(fromCertificates.pinScope, .leaf)
        XCTAssertEqual(fromCertificates.pinnedCertificates, [Fixtures.rootA.der])
    }

    func testPinsAreTheConfiguredOnesThenThoseFromCertificates() throws {
        let policy = try SecurityPolicy(
            mode: .publicKey, pins: [pinA], pinnedCertificates: [Fixtures.rootB.der], certificatePins: [Fixtures.rootB.pin]
        )
        XCTAssertEqual(policy.pins, [pinA, Fixtures.rootB.pin])

        let certificate = try Fixtures.certificatePolicy([Fixtures.rootA, Fixtures.rootB])
        XCTAssertEqual(certificate.pins, [Fixtures.rootA.pin, Fixtures.rootB.pin])
        XCTAssertEqual(certificate.pinnedCertificates, [Fixtures.rootA.der, Fixtures.rootB.der])
    }

    func testDefaultValidatesChainAndHostnameWithoutPinning() throws {
        let policy = SecurityPolicy.default
        XCTAssertEqual(policy.mode, .none)
        XCTAssertEqual(policy.pins, [])
        XCTAssertEqual(policy.pinnedCertificates, [])
        XCTAssertFalse(policy.allowInvalidCertificates)
        XCTAssertTrue(policy.validatesDomainName)
        XCTAssertEqual(policy, try SecurityPolicy(mode: .none), "the default is what an empty tls section loads as")
    }

    func testConfigSpellings() {
        XCTAssertEqual(PinningMode(rawValue: "public-key"), .publicKey)
        XCTAssertEqual(PinningMode(rawValue: "certificate"), .certificate)
        XCTAssertEqual(PinningMode(rawValue: "none"), PinningMode.none)
        XCTAssertNil(PinningMode(rawValue: "publicKey"))
        XCTAssertEqual(PinScope(rawValue: "leaf"), .leaf)
        XCTAssertEqual(PinScope(rawValue: "chain"), .chain)
    }
}
