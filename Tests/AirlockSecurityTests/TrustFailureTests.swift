import AirlockSecurity
import XCTest

/// What a rejected server looks like to logs, metrics and the client.
final class TrustFailureTests: XCTestCase {
    func testMessageIsNSURLErrorServerCertificateUntrustedWithReason() {
        let failure = TrustFailure(reason: .expired, verifyError: "certificate has expired")
        XCTAssertEqual(
            failure.message(host: "api.example.com"),
            "The certificate for this server is invalid. You might be connecting to a server that is pretending to be "
                + "\u{201C}api.example.com\u{201D} which could put your confidential information at risk. "
                + "(expired: certificate has expired)"
        )
        XCTAssertTrue(failure.message(host: "10.0.0.7").contains("\u{201C}10.0.0.7\u{201D}"))
    }

    func testDetailWithoutVerifyErrorDescribesTheReason() {
        let failure = TrustFailure(reason: .pinMismatch)
        XCTAssertNil(failure.verifyError)
        XCTAssertEqual(failure.detail, "no certificate in the chain matches a pin")
        XCTAssertTrue(failure.message(host: "h").hasSuffix(" (pin-mismatch: no certificate in the chain matches a pin)"))
        XCTAssertEqual(TrustFailure(reason: .handshakeFailed, detail: "peer closed").description, "handshake-failed: peer closed")
    }

    func testCodeIsAlwaysServerCertificateUntrusted() {
        for reason in TrustFailureReason.allCases {
            XCTAssertEqual(TrustFailure(reason: reason).code, -1202, "\(reason)")
        }
    }

    func testReasonsAreStableLabels() {
        XCTAssertEqual(TrustFailureReason.allCases.map(\.rawValue),
                       ["pin-mismatch", "untrusted-chain", "hostname-mismatch", "expired", "not-yet-valid", "weak-certificate",
                        "handshake-failed"])
    }
}
