import AirlockIO
import AirlockSecurity

/// What `airlock pin` prints: for each certificate its subject, issuer, expiry and
/// `sha256/…` pin (SHA-256 over the DER SubjectPublicKeyInfo, base64).
public enum PinReport {
    /// Certificates in PEM or DER files (bundles too).
    public static func forFiles(_ paths: [String]) throws -> String {
        var out = ""
        for path in paths {
            let certs = try PeerCertificate.load(file: path)
            out += "# \(path)\n" + render(certs)
        }
        return out
    }

    /// The chain a live server presents (connects and handshakes; sends nothing else). A failed
    /// verification names the reason the gateway would reject it with, e.g. "(weak-certificate)".
    public static func forServer(host: String, port: UInt16, serverName: String?, caFile: String?) throws -> String {
        let result = try TLSProbe.fetch(host: host, port: port, serverName: serverName ?? host, caFile: caFile)
        var verification = result.verification
        if let code = result.verifyCode {
            verification += " (\(VerifyFailure.fromOpenSSL(code: code, text: result.verification).reason.rawValue))"
        }
        return "# \(host):\(port) (servername \(serverName ?? host)) verification: \(verification)\n"
            + render(result.presented)
    }

    static func render(_ certs: [PeerCertificate]) -> String {
        var out = ""
        for (i, c) in certs.enumerated() {
            out += "[\(i)] subject:  \(c.subject)\n"
            out += "    issuer:   \(c.issuer)\n"
            out += "    expires:  \(c.notAfter)\n"
            out += "    pin:      \(c.pinText)\n"
        }
        return out
    }
}
