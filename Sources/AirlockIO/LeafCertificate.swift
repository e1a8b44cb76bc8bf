import COpenSSL

/// One minted leaf certificate (an owned X509*) and the canonical name it was minted for.
/// Immutable; shared by every connection that presents it.
public final class LeafCertificate: @unchecked Sendable {
    let x509: OpaquePointer
    /// The canonical name: a lowercase DNS name, or an IP address as `inet_ntop` writes it.
    public let name: String
    /// notAfter, seconds since 1970.
    public let expirySeconds: Int64

    init(taking x509: OpaquePointer, name: String) {
        self.x509 = x509
        self.name = name
        expirySeconds = CertificateAuthority.seconds(X509_get0_notAfter(x509))
    }

    deinit { X509_free(x509) }

    public var pem: String { CertificateAuthority.pem(x509) }

    public var certificate: PeerCertificate { PeerCertificate(x509) }
}
