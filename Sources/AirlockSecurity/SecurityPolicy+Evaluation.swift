extension SecurityPolicy {
    /// The X509 verifications the TLS layer must run for `host`, in order, each over the chain
    /// the server sent:
    /// - unless `allowInvalidCertificates`: against default trust;
    /// - in certificate mode: against the pinned certificates as the only anchors.
    /// Both check dates, and check the name when `validatesDomainName`; and the security level.
    /// - when neither runs (public-key pinning with `allowInvalidCertificates`): the presented
    ///   chain's security level only (`.presentedChain`), so a pin never excuses a weak key.
    public func validations(for host: String) -> [ValidationRequest] {
        let name = validatesDomainName ? host : nil
        var requests: [ValidationRequest] = []
        if !allowInvalidCertificates {
            requests.append(ValidationRequest(anchors: .defaultTrust, hostname: name))
        }
        if mode == .certificate {
            requests.append(ValidationRequest(anchors: .pinnedCertificates, hostname: name))
        }
        if requests.isEmpty {
            // Public-key pinning without validation: still no key or digest below the level.
            requests.append(ValidationRequest(anchors: .presentedChain, hostname: nil))
        }
        return requests
    }

    /// AFSecurityPolicy's `evaluateServerTrust:forDomain:`. Fails closed: a missing outcome or an
    /// empty chain rejects the server.
    public func evaluate(_ trust: ServerTrust) -> TrustDecision {
        guard !trust.presented.isEmpty else {
            return .rejected(TrustFailure(reason: .handshakeFailed, detail: "the server presented no certificate"))
        }
        var validatedChains: [TrustAnchors: [CertificateFacts]] = [:]
        for request in validations(for: trust.host) {
            guard let outcome = trust.outcomes[request] else {
                return .rejected(TrustFailure(reason: .handshakeFailed, detail: "verification \(request.summary) did not run"))
            }
            switch outcome {
            case .failure(let failure):
                return .rejected(TrustFailure(failure))
            case .success(let chain) where chain.isEmpty:
                return .rejected(TrustFailure(reason: .handshakeFailed, detail: "verification \(request.summary) built no chain"))
            case .success(let chain):
                validatedChains[request.anchors] = chain
            }
        }

        switch mode {
        case .none:
            return .trusted
        case .publicKey:
            // The chain OpenSSL validated, or the one the server sent when validation was skipped.
            let chain = allowInvalidCertificates ? trust.presented : validatedChains[.defaultTrust] ?? []
            return inScope(chain).contains { pinSet.contains($0.pin) }
                ? .trusted
                : .rejected(TrustFailure(reason: .pinMismatch, detail: "no \(pinScope.noun) has a pinned public key"))
        case .certificate:
            // The chain built to the pinned anchors: a pinned root the server did not send counts.
            let chain = validatedChains[.pinnedCertificates] ?? []
            return inScope(chain).contains { pinnedCertificateSet.contains($0.der) }
                ? .trusted
                : .rejected(TrustFailure(reason: .pinMismatch, detail: "no \(pinScope.noun) is a pinned certificate"))
        }
    }

    private func inScope(_ chain: [CertificateFacts]) -> ArraySlice<CertificateFacts> {
        switch pinScope {
        case .chain: chain[...]
        case .leaf: chain.prefix(1)
        }
    }
}

extension ValidationRequest {
    var summary: String {
        let anchors = switch anchors {
        case .defaultTrust: "against default trust"
        case .pinnedCertificates: "against the pinned certificates"
        case .presentedChain: "of the presented chain's security level"
        }
        return hostname.map { "\(anchors) for \($0)" } ?? anchors
    }
}

extension PinScope {
    fileprivate var noun: String {
        switch self {
        case .chain: "certificate in the chain"
        case .leaf: "leaf certificate"
        }
    }
}
