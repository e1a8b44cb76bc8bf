/// A server the policy (or the handshake) rejected.
public struct TrustFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: TrustFailureReason
    /// Always -1202, `NSURLErrorServerCertificateUntrusted`, as AFNetworking reports it.
    public let code: Int
    /// OpenSSL's verify error text when a validation failed.
    public let verifyError: String?
    /// Short human text after the reason in `message(host:)`: `verifyError` when there is one.
    public let detail: String

    public static let serverCertificateUntrusted = -1202

    /// For the TLS layer too, e.g. `TrustFailure(reason: .handshakeFailed, detail: "peer closed")`.
    public init(reason: TrustFailureReason, verifyError: String? = nil, detail: String? = nil) {
        self.reason = reason
        self.code = TrustFailure.serverCertificateUntrusted
        self.verifyError = verifyError
        self.detail = detail ?? verifyError ?? TrustFailure.defaultDetail(reason)
    }

    init(_ failure: VerifyFailure) {
        self.init(reason: failure.reason, verifyError: failure.text)
    }

    private static func defaultDetail(_ reason: TrustFailureReason) -> String {
        switch reason {
        case .pinMismatch: "no certificate in the chain matches a pin"
        case .untrustedChain: "the chain does not lead to a trusted anchor"
        case .hostnameMismatch: "the certificate does not name the host"
        case .expired: "a certificate is outside its validity period"
        case .notYetValid: "a certificate is not valid yet"
        case .weakCertificate: "a certificate is below the required security level"
        case .handshakeFailed: "the TLS handshake did not complete"
        }
    }

    /// NSURLErrorServerCertificateUntrusted's text, then the reason and detail.
    /// AFNetworking's text for the failure, then the reason. `pinned` and `privateCA` describe
    /// the route: a pinned route whose chain does not lead to a trusted root (a private CA) and
    /// that names no `security.ca` gets a hint at the fix.
    public func message(host: String, pinned: Bool = false, privateCA: Bool = true) -> String {
        var text = "The certificate for this server is invalid. You might be connecting to a server that is pretending to be "
            + "\u{201C}\(host)\u{201D} which could put your confidential information at risk. (\(reason.rawValue): \(detail))"
        if reason == .untrustedChain, pinned, !privateCA {
            text += " A pinned server whose chain ends in a private CA needs that CA as the route's security.ca "
                + "(or allow_invalid_certificates: true with the pins)."
        }
        return text
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
