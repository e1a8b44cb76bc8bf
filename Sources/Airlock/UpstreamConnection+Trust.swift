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
        let host = key.host
        let presented = stream.tlsPeerChain ?? []
        let decision: TrustDecision
        if stream.tlsSessionReused {
            // Resumed from this worker's cache, whose sessions are stored only after passing
            // this same policy (the key holds host, port and trust identity).
            decision = .trusted
        } else {
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
            decision = security.policy.evaluate(ServerTrust(host: host, presented: presented.map(Self.facts), outcomes: outcomes))
        }
        switch decision {
        case .trusted:
            trusted = true
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

    static func facts(_ c: PeerCertificate) -> CertificateFacts {
        CertificateFacts(der: c.der, spkiSHA256: c.spkiSHA256, subject: c.subject, issuer: c.issuer, notAfter: c.notAfter)
    }
}

/// Lets the TLS layer reach the connection without keeping it alive.
final class SessionSink {
    weak var connection: UpstreamConnection?
}
