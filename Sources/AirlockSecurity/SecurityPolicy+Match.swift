extension SecurityPolicy {
    /// Which certificate satisfied the pinning of a trusted server: for `public-key`, the first
    /// certificate in scope (of the chain OpenSSL validated, or the presented one when validation
    /// is skipped) whose public key is pinned; for `certificate`, the first one in scope (of the
    /// chain built to the pinned certificates: a pinned root the server did not send counts) that
    /// is pinned. nil with `pinning: none`, or when nothing matches (the server is not trusted).
    /// The same chains as `evaluate(_:)`, asked once more for the dashboard's "pin matched".
    public func matchedCertificate(_ trust: ServerTrust) -> CertificateFacts? {
        func validated(_ anchors: TrustAnchors) -> [CertificateFacts] {
            for (request, outcome) in trust.outcomes where request.anchors == anchors {
                if case .success(let chain) = outcome { return chain }
            }
            return []
        }
        func scoped(_ chain: [CertificateFacts]) -> ArraySlice<CertificateFacts> {
            pinScope == .leaf ? chain.prefix(1) : chain[...]
        }
        switch mode {
        case .none:
            return nil
        case .publicKey:
            return scoped(allowInvalidCertificates ? trust.presented : validated(.defaultTrust)).first { pinSet.contains($0.pin) }
        case .certificate:
            return scoped(validated(.pinnedCertificates)).first { pinnedCertificateSet.contains($0.der) }
        }
    }
}
