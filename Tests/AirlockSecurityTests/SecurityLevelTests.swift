import AirlockSecurity
import XCTest

/// The security level of a policy (`min_security_level`): OpenSSL's 0...5, default 2, below 2 only with
/// pinning; the verify errors of a level refusal map to weak-certificate.
final class SecurityLevelTests: XCTestCase {
    typealias F = Fixtures

    private func assertRefused(_ words: String, file: StaticString = #filePath, line: UInt = #line,
                               _ make: () throws -> SecurityPolicy) {
        XCTAssertThrowsError(try make(), file: file, line: line) { error in
            guard let error = error as? SecurityConfigError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(error.key, "min_security_level", error.message, file: file, line: line)
            XCTAssertTrue(error.message.contains(words), "\"\(error.message)\" lacks \"\(words)\"", file: file, line: line)
        }
    }

    func testDefaultIsLevelTwo() throws {
        XCTAssertEqual(SecurityPolicy.default.minimumSecurityLevel, 2)
        XCTAssertEqual(try SecurityPolicy(mode: .none).minimumSecurityLevel, 2)
        XCTAssertEqual(try F.publicKeyPolicy([F.leafA.pin]).minimumSecurityLevel, 2)
    }

    func testLevelsOutsideZeroToFiveAreRefused() {
        for level in [-1, 6, 100] {
            assertRefused("from 0 to 5, got \(level)") {
                try SecurityPolicy(mode: .publicKey, pins: [F.leafA.pin], minimumSecurityLevel: level)
            }
        }
    }

    func testLoweringWithoutPinningIsRefused() {
        for level in [0, 1] {
            assertRefused("only with pinning") { try SecurityPolicy(mode: .none, minimumSecurityLevel: level) }
            assertRefused("only with pinning") {
                try SecurityPolicy(mode: .none, validatesDomainName: false, minimumSecurityLevel: level)
            }
        }
    }

    func testLoweringWithPinningAndRaisingWithoutAreAccepted() throws {
        for level in [0, 1] {
            XCTAssertEqual(try SecurityPolicy(mode: .publicKey, pins: [F.leafA.pin], minimumSecurityLevel: level)
                .minimumSecurityLevel, level)
            XCTAssertEqual(try SecurityPolicy(mode: .certificate, pinnedCertificates: [F.rootA.der],
                                              certificatePins: [F.rootA.pin], minimumSecurityLevel: level)
                .minimumSecurityLevel, level)
        }
        for level in 2...5 {
            XCTAssertEqual(try SecurityPolicy(mode: .none, minimumSecurityLevel: level).minimumSecurityLevel, level)
        }
    }

    /// Contexts and pooled connections are shared by cache key: a lowered route must not share the default's.
    func testEachLevelHasItsOwnCacheKeyAndTheDefaultKeepsItsKey() throws {
        XCTAssertEqual(try SecurityPolicy(mode: .none, minimumSecurityLevel: 2).cacheKey, SecurityPolicy.default.cacheKey)
        var keys = Set<String>()
        for level in 0...5 {
            keys.insert(try SecurityPolicy(mode: .publicKey, pins: [F.leafA.pin], minimumSecurityLevel: level).cacheKey)
        }
        XCTAssertEqual(keys.count, 6, "\(keys)")
    }

    func testLevelRefusalsMapToWeakCertificate() {
        let texts: [(Int32, String)] = [
            (66, "EE certificate key too weak"), (67, "CA certificate key too weak"),
            (68, "CA signature digest algorithm too weak"),
        ]
        for (code, text) in texts {
            let failure = VerifyFailure.fromOpenSSL(code: code, text: text)
            XCTAssertEqual(failure, .weakCertificate(text), "code \(code)")
            XCTAssertEqual(failure.reason, .weakCertificate)
            XCTAssertEqual(failure.reason.rawValue, "weak-certificate")
            let decision = SecurityPolicy.default.evaluate(F.trust([F.defaultRequest: .failure(failure)]))
            XCTAssertEqual(decision, .rejected(TrustFailure(reason: .weakCertificate, verifyError: text)), "code \(code)")
            XCTAssertEqual(F.failure(decision)?.message(host: F.host).contains("(weak-certificate: \(text))"), true)
        }
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 65, text: "x").reason, .untrustedChain, "65 is not a level refusal")
    }

    /// Public-key pinning with allow_invalid_certificates asks for the level check of the presented chain, and
    /// a matching pin does not outweigh its failure; a missing outcome fails closed.
    func testWithoutValidationTheLevelCheckStillDecides() throws {
        let policy = try F.publicKeyPolicy([F.leafA.pin], allowInvalid: true)
        let levelOnly = ValidationRequest(anchors: .presentedChain, hostname: nil)
        XCTAssertEqual(policy.validations(for: F.host), [levelOnly])
        let weak = F.trust([levelOnly: .failure(.weakCertificate("EE certificate key too weak"))])
        XCTAssertEqual(policy.evaluate(weak), .rejected(TrustFailure(reason: .weakCertificate, verifyError: "EE certificate key too weak")))
        XCTAssertEqual(F.reason(policy.evaluate(F.trust([:]))), .handshakeFailed, "the level check did not run")
        XCTAssertEqual(policy.evaluate(F.trust([levelOnly: .success(F.presentedA)])), .trusted)
    }

    /// A pin does not excuse a weak chain: public-key pinning rejects on the failed verification first.
    func testAMatchingPinDoesNotExcuseAWeakChain() throws {
        let policy = try F.publicKeyPolicy([F.leafA.pin])
        let trust = F.trust([F.defaultRequest: .failure(.weakCertificate("CA signature digest algorithm too weak"))])
        XCTAssertEqual(F.failure(policy.evaluate(trust))?.reason, .weakCertificate)
    }
}
