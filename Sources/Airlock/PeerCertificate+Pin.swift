import AirlockIO
import AirlockSecurity

extension PeerCertificate {
    /// `sha256/<base64>` of the SubjectPublicKeyInfo, as `pins:` takes it.
    var pinText: String {
        (try? Pin(digest: spkiSHA256))?.description ?? "sha256/?"
    }
}
