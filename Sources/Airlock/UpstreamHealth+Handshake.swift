import AirlockConfig
import AirlockSecurity
import AirlockSession
import Synchronization

/// The last TLS handshake with which an https upstream passed its route's policy, for
/// `GET /upstreams` and the dashboard: the leaf's subject, issuer and expiry, and the
/// certificate whose pin matched.
struct HandshakeRecord: Sendable {
    var atUnixMillis: Int64
    /// The last connection resumed a session (no new chain): the facts are the full handshake's.
    var resumed: Bool
    var leaf: CertificateFacts
    var matched: CertificateFacts?
}

extension Reachabilities {
    /// From a worker loop, once per trusted TLS connection (never per request): every fixed
    /// upstream with this key. `trust` nil: a resumed session, which passed the policy when stored.
    func recordHandshake(_ key: UpstreamKey, trust: ServerTrust?) {
        for case let h? in byRoute where h.key == key { h.recordHandshake(trust) }
    }
}

extension UpstreamHealth {
    func recordHandshake(_ trust: ServerTrust?) {
        let now = RejectRecord.nowUnixMillis()
        guard let trust, let leaf = trust.presented.first else {
            lastHandshake.withLock { last in
                last?.atUnixMillis = now
                last?.resumed = true
            }
            return
        }
        let record = HandshakeRecord(atUnixMillis: now, resumed: false, leaf: leaf,
                                     matched: security?.policy.matchedCertificate(trust))
        lastHandshake.withLock { $0 = record }
    }

    /// `,"security":{…}` for an https upstream: the route's pinning (`pinning`, `pin_scope`,
    /// `pins` (configured and derived from `certificates`), `certificates` (count),
    /// `allow_invalid_certificates`, `validates_domain_name`) and `last_handshake` (null until one;
    /// `at`, `resumed`, `subject`, `issuer`, `expires`, `pin_matched`: the pin and subject of the
    /// certificate that satisfied the pinning, null with `pinning: none`). Nothing for http.
    func appendSecurityJSON(to s: inout String) {
        guard let policy = security?.policy else { return }
        s += ",\"security\":{\"pinning\":\"\(policy.mode.rawValue)\",\"pin_scope\":\"\(policy.pinScope.rawValue)\",\"pins\":["
        for (i, pin) in policy.pins.enumerated() {
            if i > 0 { s += "," }
            JSON.appendString(pin.description, to: &s)
        }
        s += "],\"certificates\":\(policy.pinnedCertificates.count)"
        s += ",\"allow_invalid_certificates\":\(policy.allowInvalidCertificates),\"validates_domain_name\":\(policy.validatesDomainName)"
        s += ",\"last_handshake\":"
        guard let h = lastHandshake.withLock({ $0 }) else {
            s += "null}"
            return
        }
        s += "{\"at\":\(h.atUnixMillis),\"resumed\":\(h.resumed),\"subject\":"
        JSON.appendString(h.leaf.subject, to: &s)
        s += ",\"issuer\":"
        JSON.appendString(h.leaf.issuer, to: &s)
        s += ",\"expires\":"
        JSON.appendString(h.leaf.notAfter, to: &s)
        s += ",\"pin_matched\":"
        if let m = h.matched {
            s += "{\"pin\":"
            JSON.appendString(m.pin.description, to: &s)
            s += ",\"subject\":"
            JSON.appendString(m.subject, to: &s)
            s += "}"
        } else {
            s += "null"
        }
        s += "}}"
    }
}
