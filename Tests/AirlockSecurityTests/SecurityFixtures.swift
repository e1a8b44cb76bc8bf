import AirlockSecurity

/// Synthetic certificates: the module never parses DER, so any bytes do, as long as every
/// certificate's DER and SPKI digest differ from every other's.
enum Fixtures {
    static let host = "api.example.com"

    static func certificate(_ name: String, seed: UInt8, issuer: String) -> CertificateFacts {
        CertificateFacts(
            der: Array("DER of \(name)".utf8),
            spkiSHA256: (0..<32).map { seed &* 37 &+ UInt8($0) },
            subject: "CN=\(name)",
            issuer: "CN=\(issuer)",
            notAfter: "Jan  1 00:00:00 2030 GMT"
        )
    }

    // Chain A: leaf <- intermediate <- root, the server's real chain.
    static let leafA = certificate("api.example.com", seed: 1, issuer: "Example Intermediate")
    static let intermediateA = certificate("Example Intermediate", seed: 2, issuer: "Example Root")
    static let rootA = certificate("Example Root", seed: 3, issuer: "Example Root")
    /// What the server sends: leaf and intermediate, not the root.
    static let presentedA = [leafA, intermediateA]
    /// What OpenSSL builds from it: the anchor at the end.
    static let validatedA = [leafA, intermediateA, rootA]

    // Chain B: an unrelated root and leaf.
    static let leafB = certificate("other.example.net", seed: 11, issuer: "Other Root")
    static let rootB = certificate("Other Root", seed: 13, issuer: "Other Root")

    static func pin(_ certificate: CertificateFacts) -> Pin { certificate.pin }

    static let defaultRequest = ValidationRequest(anchors: .defaultTrust, hostname: host)
    static let pinnedRequest = ValidationRequest(anchors: .pinnedCertificates, hostname: host)

    static func trust(
        presented: [CertificateFacts] = presentedA,
        _ outcomes: [ValidationRequest: ValidationOutcome]
    ) -> ServerTrust {
        ServerTrust(host: host, presented: presented, outcomes: outcomes)
    }

    static func publicKeyPolicy(
        _ pins: [Pin], scope: PinScope = .chain, allowInvalid: Bool = false, validatesDomainName: Bool = true
    ) throws -> SecurityPolicy {
        try SecurityPolicy(
            mode: .publicKey, pins: pins, pinScope: scope,
            allowInvalidCertificates: allowInvalid, validatesDomainName: validatesDomainName
        )
    }

    static func certificatePolicy(
        _ certificates: [CertificateFacts], allowInvalid: Bool = false, validatesDomainName: Bool = true
    ) throws -> SecurityPolicy {
        try SecurityPolicy(
            mode: .certificate, pinnedCertificates: certificates.map(\.der), certificatePins: certificates.map(\.pin),
            allowInvalidCertificates: allowInvalid, validatesDomainName: validatesDomainName
        )
    }

    static func reason(_ decision: TrustDecision) -> TrustFailureReason? {
        if case .rejected(let failure) = decision { failure.reason } else { nil }
    }

    static func failure(_ decision: TrustDecision) -> TrustFailure? {
        if case .rejected(let failure) = decision { failure } else { nil }
    }
}
