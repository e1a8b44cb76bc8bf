import AirlockSecurity
import XCTest

/// `evaluate(_:)`: AFSecurityPolicy's evaluateServerTrust:forDomain: over synthetic chains.
final class SecurityPolicyEvaluationTests: XCTestCase {
    typealias F = Fixtures

    // MARK: none

    func testNoneTrustsAChainThatValidates() {
        let trust = F.trust([F.defaultRequest: .success(F.validatedA)])
        XCTAssertEqual(SecurityPolicy.default.evaluate(trust), .trusted)
    }

    func testNoneMapsEachVerifyFailure() {
        let cases: [(VerifyFailure, TrustFailureReason)] = [
            (.expired("certificate has expired"), .expired),
            (.notYetValid("certificate is not yet valid"), .notYetValid),
            (.hostnameMismatch("hostname mismatch"), .hostnameMismatch),
            (.untrusted("unable to get local issuer certificate"), .untrustedChain),
        ]
        for (failure, reason) in cases {
            let decision = SecurityPolicy.default.evaluate(F.trust([F.defaultRequest: .failure(failure)]))
            XCTAssertEqual(decision, .rejected(TrustFailure(reason: reason, verifyError: failure.text)), "\(failure)")
            XCTAssertEqual(F.failure(decision)?.code, -1202)
            XCTAssertEqual(F.failure(decision)?.verifyError, failure.text)
        }
    }

    func testOpenSSLCodesMapToTheirCases() {
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 10, text: "certificate has expired"), .expired("certificate has expired"))
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 9, text: "not yet"), .notYetValid("not yet"))
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 62, text: "hostname mismatch"), .hostnameMismatch("hostname mismatch"))
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 64, text: "IP address mismatch"), .hostnameMismatch("IP address mismatch"))
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 20, text: "unable to get local issuer certificate"),
                       .untrusted("unable to get local issuer certificate"))
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 18, text: "self-signed certificate"), .untrusted("self-signed certificate"))
        XCTAssertEqual(VerifyFailure.fromOpenSSL(code: 12, text: "CRL has expired"), .untrusted("CRL has expired"),
                       "an expired CRL is not an expired certificate")
    }

    // MARK: public-key

    private func publicKey(_ pins: [Pin], scope: PinScope = .chain) throws -> TrustDecision {
        try F.publicKeyPolicy(pins, scope: scope).evaluate(F.trust([F.defaultRequest: .success(F.validatedA)]))
    }

    func testPublicKeyPinOnAnyCertificateOfTheValidatedChain() throws {
        XCTAssertEqual(try publicKey([F.leafA.pin]), .trusted, "leaf")
        XCTAssertEqual(try publicKey([F.intermediateA.pin]), .trusted, "intermediate")
        XCTAssertEqual(try publicKey([F.rootA.pin]), .trusted, "root: in the validated chain though the server did not send it")
    }

    func testPublicKeyBackupPins() throws {
        // The current key is unknown to the server-side rotation plan; any listed pin will do.
        XCTAssertEqual(try publicKey([F.leafB.pin, F.rootB.pin, F.intermediateA.pin]), .trusted)
        XCTAssertEqual(F.reason(try publicKey([F.leafB.pin, F.rootB.pin])), .pinMismatch)
    }

    func testPublicKeyPinOfAnotherChainIsAMismatch() throws {
        let decision = try publicKey([F.rootB.pin])
        XCTAssertEqual(F.reason(decision), .pinMismatch)
        XCTAssertNil(F.failure(decision)?.verifyError, "the chain itself validated")
        XCTAssertEqual(F.failure(decision)?.detail, "no certificate in the chain has a pinned public key")
    }

    func testPublicKeyPinsFromCertificatesCount() throws {
        let policy = try SecurityPolicy(mode: .publicKey, pinnedCertificates: [F.rootA.der], certificatePins: [F.rootA.pin])
        XCTAssertEqual(policy.evaluate(F.trust([F.defaultRequest: .success(F.validatedA)])), .trusted)
    }

    func testLeafScopeMatchesOnlyTheLeaf() throws {
        XCTAssertEqual(try publicKey([F.leafA.pin], scope: .leaf), .trusted)
        let rootOnly = try publicKey([F.rootA.pin], scope: .leaf)
        XCTAssertEqual(F.reason(rootOnly), .pinMismatch)
        XCTAssertEqual(F.failure(rootOnly)?.detail, "no leaf certificate has a pinned public key")
        XCTAssertEqual(F.reason(try publicKey([F.intermediateA.pin], scope: .leaf)), .pinMismatch)
    }

    func testPublicKeyValidationFailsBeforePinsAreLookedAt() throws {
        // Right pin, but the chain does not validate: AFNetworking validates first.
        let policy = try F.publicKeyPolicy([F.leafA.pin])
        let decision = policy.evaluate(F.trust([F.defaultRequest: .failure(.untrusted("self-signed certificate in certificate chain"))]))
        XCTAssertEqual(decision, .rejected(TrustFailure(reason: .untrustedChain, verifyError: "self-signed certificate in certificate chain")))
        let expired = policy.evaluate(F.trust([F.defaultRequest: .failure(.expired("certificate has expired"))]))
        XCTAssertEqual(F.reason(expired), .expired)
    }

    func testPublicKeyMatchesTheValidatedChainNotThePresentedOne() throws {
        // The server sends rootB's certificate along, but OpenSSL built the chain to rootA:
        // an unvalidated extra certificate must not satisfy a pin.
        let policy = try F.publicKeyPolicy([F.rootB.pin])
        let trust = F.trust(presented: [F.leafA, F.intermediateA, F.rootB], [F.defaultRequest: .success(F.validatedA)])
        XCTAssertEqual(F.reason(policy.evaluate(trust)), .pinMismatch)
    }

    /// Only the security level of the presented chain is checked (`levelOnly`): no anchor, no name.
    private let levelOnly = ValidationRequest(anchors: .presentedChain, hostname: nil)

    func testAllowInvalidPinsThePresentedChainWithoutValidation() throws {
        let policy = try F.publicKeyPolicy([F.intermediateA.pin], allowInvalid: true)
        XCTAssertEqual(policy.validations(for: F.host), [levelOnly], "no validation requested, only the level")
        let levelPassed = F.trust([levelOnly: .success(F.presentedA)])
        XCTAssertEqual(policy.evaluate(levelPassed), .trusted, "the presented intermediate carries the pin")

        let rootPinned = try F.publicKeyPolicy([F.rootA.pin], allowInvalid: true)
        XCTAssertEqual(F.reason(rootPinned.evaluate(levelPassed)), .pinMismatch, "the root was not presented, and nothing built a chain to it")

        let leafScope = try F.publicKeyPolicy([F.leafA.pin], scope: .leaf, allowInvalid: true)
        XCTAssertEqual(leafScope.evaluate(levelPassed), .trusted)
        let leafScopeIntermediate = try F.publicKeyPolicy([F.intermediateA.pin], scope: .leaf, allowInvalid: true)
        XCTAssertEqual(F.reason(leafScopeIntermediate.evaluate(levelPassed)), .pinMismatch)
    }

    func testAllowInvalidIgnoresOutcomesItDidNotAskFor() throws {
        let policy = try F.publicKeyPolicy([F.leafA.pin], allowInvalid: true)
        let trust = F.trust([F.defaultRequest: .failure(.untrusted("self-signed certificate")), levelOnly: .success(F.presentedA)])
        XCTAssertEqual(policy.evaluate(trust), .trusted)
    }

    func testWithoutDomainValidationTheNamelessRequestIsTheOneThatCounts() throws {
        let policy = try F.publicKeyPolicy([F.leafA.pin], validatesDomainName: false)
        let nameless = ValidationRequest(anchors: .defaultTrust, hostname: nil)
        XCTAssertEqual(policy.evaluate(F.trust([nameless: .success(F.validatedA)])), .trusted)
        XCTAssertEqual(F.reason(policy.evaluate(F.trust([F.defaultRequest: .success(F.validatedA)]))), .handshakeFailed,
                       "an outcome for a request the policy did not make does not stand in for it")
    }

    // MARK: certificate

    private func certificateTrust(default defaultOutcome: ValidationOutcome = .success(F.validatedA),
                                  pinned: ValidationOutcome = .success(F.validatedA)) -> ServerTrust {
        F.trust([F.defaultRequest: defaultOutcome, F.pinnedRequest: pinned])
    }

    func testCertificatePinnedRootNotPresentedButInTheValidatedChain() throws {
        XCTAssertFalse(F.presentedA.contains(F.rootA))
        XCTAssertEqual(try F.certificatePolicy([F.rootA]).evaluate(certificateTrust()), .trusted)
    }

    func testCertificatePinnedLeafOrIntermediate() throws {
        XCTAssertEqual(try F.certificatePolicy([F.leafA]).evaluate(certificateTrust()), .trusted)
        XCTAssertEqual(try F.certificatePolicy([F.rootB, F.intermediateA]).evaluate(certificateTrust()), .trusted)
    }

    func testCertificateUnrelatedPinnedCertificateIsAMismatch() throws {
        let decision = try F.certificatePolicy([F.rootB]).evaluate(certificateTrust())
        XCTAssertEqual(decision, .rejected(TrustFailure(reason: .pinMismatch, detail: "no certificate in the chain is a pinned certificate")))
    }

    func testCertificateComparesDERNotKeys() throws {
        // Same key, re-issued certificate: public-key mode would accept it, certificate mode does not.
        var reissuedRoot = F.rootA
        reissuedRoot.der = Array("DER of the re-issued Example Root".utf8)
        let decision = try F.certificatePolicy([reissuedRoot]).evaluate(certificateTrust())
        XCTAssertEqual(F.reason(decision), .pinMismatch)
    }

    func testCertificateMatchesThePinnedAnchorChainNotTheDefaultOne() throws {
        // Default trust built a chain through rootA; the pinned-anchor chain ends at rootB.
        let pinnedChain = [F.leafA, F.intermediateA, F.rootB]
        let policy = try F.certificatePolicy([F.rootA, F.rootB])
        XCTAssertEqual(policy.evaluate(certificateTrust(pinned: .success(pinnedChain))), .trusted)
        let onlyA = try F.certificatePolicy([F.rootA])
        XCTAssertEqual(F.reason(onlyA.evaluate(certificateTrust(pinned: .success(pinnedChain)))), .pinMismatch)
    }

    func testCertificateValidationFailuresKeepTheirReason() throws {
        let policy = try F.certificatePolicy([F.rootA])
        let againstPinned = policy.evaluate(certificateTrust(pinned: .failure(.untrusted("unable to get local issuer certificate"))))
        XCTAssertEqual(againstPinned, .rejected(TrustFailure(reason: .untrustedChain, verifyError: "unable to get local issuer certificate")))
        XCTAssertEqual(F.reason(policy.evaluate(certificateTrust(pinned: .failure(.expired("certificate has expired"))))), .expired)
        XCTAssertEqual(F.reason(policy.evaluate(certificateTrust(pinned: .failure(.hostnameMismatch("hostname mismatch"))))), .hostnameMismatch)

        // Default trust is checked first: its failure wins over the pinned one.
        let both = policy.evaluate(certificateTrust(default: .failure(.notYetValid("certificate is not yet valid")),
                                                    pinned: .failure(.untrusted("x"))))
        XCTAssertEqual(both, .rejected(TrustFailure(reason: .notYetValid, verifyError: "certificate is not yet valid")))
    }

    func testCertificateWithAllowInvalidValidatesOnlyAgainstThePins() throws {
        // A self-signed upstream whose certificate is pinned.
        let selfSigned = F.certificate("self-signed.internal", seed: 21, issuer: "self-signed.internal")
        let policy = try F.certificatePolicy([selfSigned], allowInvalid: true)
        let trust = F.trust(presented: [selfSigned], [F.pinnedRequest: .success([selfSigned])])
        XCTAssertEqual(policy.evaluate(trust), .trusted)
        let hostnameWrong = F.trust(presented: [selfSigned], [F.pinnedRequest: .failure(.hostnameMismatch("hostname mismatch"))])
        XCTAssertEqual(F.reason(policy.evaluate(hostnameWrong)), .hostnameMismatch)
    }

    // MARK: fail closed

    func testMissingOutcomeIsAHandshakeFailure() throws {
        XCTAssertEqual(F.reason(SecurityPolicy.default.evaluate(F.trust([:]))), .handshakeFailed)
        XCTAssertEqual(F.reason(try F.publicKeyPolicy([F.leafA.pin]).evaluate(F.trust([:]))), .handshakeFailed)

        let policy = try F.certificatePolicy([F.rootA])
        let onlyDefault = policy.evaluate(F.trust([F.defaultRequest: .success(F.validatedA)]))
        XCTAssertEqual(onlyDefault, .rejected(TrustFailure(
            reason: .handshakeFailed,
            detail: "verification against the pinned certificates for api.example.com did not run"
        )))
        XCTAssertNil(F.failure(onlyDefault)?.verifyError)
        XCTAssertEqual(F.reason(policy.evaluate(F.trust([F.pinnedRequest: .success(F.validatedA)]))), .handshakeFailed)
    }

    func testAnOutcomeForAnotherHostDoesNotCount() {
        let elsewhere = ValidationRequest(anchors: .defaultTrust, hostname: "other.example.com")
        XCTAssertEqual(F.reason(SecurityPolicy.default.evaluate(F.trust([elsewhere: .success(F.validatedA)]))), .handshakeFailed)
    }

    func testEmptyPresentedChainIsAHandshakeFailure() throws {
        let empty = F.trust(presented: [], [F.defaultRequest: .success(F.validatedA)])
        XCTAssertEqual(SecurityPolicy.default.evaluate(empty),
                       .rejected(TrustFailure(reason: .handshakeFailed, detail: "the server presented no certificate")))
        let allowInvalid = try F.publicKeyPolicy([F.leafA.pin], allowInvalid: true)
        XCTAssertEqual(F.reason(allowInvalid.evaluate(F.trust(presented: [], [:]))), .handshakeFailed)
    }

    func testEmptyValidatedChainIsAHandshakeFailure() throws {
        let policy = try F.publicKeyPolicy([F.leafA.pin])
        XCTAssertEqual(F.reason(policy.evaluate(F.trust([F.defaultRequest: .success([])]))), .handshakeFailed)
    }

    func testMalformedDigestFromTheTLSLayerMatchesNoPin() throws {
        var leaf = F.leafA
        leaf.spkiSHA256 = Array(F.leafA.spkiSHA256.prefix(31))
        let policy = try F.publicKeyPolicy([F.leafA.pin])
        XCTAssertEqual(F.reason(policy.evaluate(F.trust([F.defaultRequest: .success([leaf, F.intermediateA])]))), .pinMismatch)
    }
}
