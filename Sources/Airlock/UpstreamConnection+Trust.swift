import AirlockConfig
import AirlockIO
import AirlockSecurity
import AirlockSession

/// The security-policy phase of a TLS upstream: after the handshake and before any byte
/// of the request, the route's policy answers AFSecurityPolicy's one question.
extension UpstreamConnection {
    func evaluateTrust() {
        guard let security else {
            owner?.upstreamConnected(self)
            return
        }
        let presented = stream.tlsPeerChain ?? []
        // A session resumed from this worker's cache passed this same policy when it was
        // stored (the key holds host, port and trust identity).
        let trust = stream.tlsSessionReused ? nil : Self.serverTrust(stream, host: key.host, security: security)
        let decision = trust.map { security.policy.evaluate($0) } ?? .trusted
        switch decision {
        case .trusted:
            trusted = true
            worker.context.reachability.recordHandshake(key, trust: trust)
            if let s = takePendingSession() { worker.tlsSessions.store(s, for: sessionKey) }
            owner?.upstreamConnected(self)
        case .rejected(let failure):
            _ = takePendingSession()
            worker.tlsSessions.remove(sessionKey)
            let o = owner
            close()
            o?.upstreamUntrusted(self, failure: failure, presented: presented)
        }
    }

    /// A session the server issued: cached once this connection is trusted (TLS 1.2
    /// sessions arrive during the handshake, before the evaluation).
    func offerSession(_ session: TLSSessionTicket) {
        if trusted {
            worker.tlsSessions.store(session, for: sessionKey)
        } else if state == .connecting {
            setPendingSession(session)
        }
    }

    /// The route's security policy over the handshake `stream` just completed (also what a
    /// reachability probe of an https upstream asks).
    static func evaluate(_ stream: Stream, host: String, security: RouteSecurity) -> TrustDecision {
        security.policy.evaluate(serverTrust(stream, host: host, security: security))
    }

    /// What the policy judges: the presented chain and the outcome of each verification it asks for.
    static func serverTrust(_ stream: Stream, host: String, security: RouteSecurity) -> ServerTrust {
        let presented = stream.tlsPeerChain ?? []
        var outcomes: [ValidationRequest: ValidationOutcome] = [:]
        for request in security.policy.validations(for: host) {
            let anchors: TLSClientContext.Anchors = switch request.anchors {
            case .defaultTrust: .defaultTrust
            case .pinnedCertificates: .pinnedCertificates
            case .presentedChain: .presentedChain
            }
            outcomes[request] = stream.tlsVerify(anchors: anchors, hostname: request.hostname)
                .map { $0.map(Self.facts) }
                .mapError { VerifyFailure.fromOpenSSL(code: $0.code, text: $0.text) }
        }
        return ServerTrust(host: host, presented: presented.map(Self.facts), outcomes: outcomes)
    }

    static func facts(_ c: PeerCertificate) -> CertificateFacts {
        CertificateFacts(der: c.der, spkiSHA256: c.spkiSHA256, subject: c.subject, issuer: c.issuer, notAfter: c.notAfter)
    }
}

/// Lets the TLS layer reach the connection without keeping it alive.
final class SessionSink {
    weak var connection: UpstreamConnection?
}
