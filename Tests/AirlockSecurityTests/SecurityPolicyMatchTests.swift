import AirlockSecurity
import XCTest

/// `matchedCertificate(_:)`: which certificate satisfied a trusted server's pinning (the
/// dashboard's "pin matched"), over the same chains `evaluate(_:)` judges.
final class SecurityPolicyMatchTests: XCTestCase {
    typealias F = Fixtures

    func testNoneMatchesNothing() {
        XCTAssertNil(SecurityPolicy.default.matchedCertificate(F.trust([F.defaultRequest: .success(F.validatedA)])))
    }

    func testPublicKeyMatchesTheFirstPinnedCertificateOfTheValidatedChain() throws {
        let trust = F.trust([F.defaultRequest: .success(F.validatedA)])
        XCTAssertEqual(try F.publicKeyPolicy([F.pin(F.rootA)]).matchedCertificate(trust), F.rootA,
                       "the root the server did not send, as OpenSSL validated it")
        XCTAssertEqual(try F.publicKeyPolicy([F.pin(F.rootA), F.pin(F.intermediateA)]).matchedCertificate(trust), F.intermediateA)
        XCTAssertNil(try F.publicKeyPolicy([F.pin(F.rootB)]).matchedCertificate(trust))
    }

    func testLeafScopeLooksAtTheLeafOnly() throws {
        let trust = F.trust([F.defaultRequest: .success(F.validatedA)])
        XCTAssertNil(try F.publicKeyPolicy([F.pin(F.rootA)], scope: .leaf).matchedCertificate(trust))
        XCTAssertEqual(try F.publicKeyPolicy([F.pin(F.leafA)], scope: .leaf).matchedCertificate(trust), F.leafA)
    }

    func testAllowInvalidMatchesOnThePresentedChain() throws {
        let policy = try F.publicKeyPolicy([F.pin(F.leafB)], allowInvalid: true)
        XCTAssertEqual(policy.matchedCertificate(F.trust(presented: [F.leafB], [:])), F.leafB)
    }

    func testCertificateModeMatchesThePinnedAnchorOfTheBuiltChain() throws {
        let policy = try F.certificatePolicy([F.rootA])
        XCTAssertEqual(policy.matchedCertificate(F.trust([F.pinnedRequest: .success(F.validatedA)])), F.rootA)
        XCTAssertNil(policy.matchedCertificate(F.trust([F.pinnedRequest: .failure(.untrusted("no"))])))
    }
}
