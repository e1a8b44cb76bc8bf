/// Facts about one certificate, computed by the TLS layer. This module never parses DER: it
/// compares `der` byte for byte and `spkiSHA256` against pins.
public struct CertificateFacts: Sendable, Equatable {
    public var der: [UInt8]
    /// SHA-256 of the DER SubjectPublicKeyInfo.
    public var spkiSHA256: [UInt8]
    public var subject: String
    public var issuer: String
    public var notAfter: String

    public init(der: [UInt8], spkiSHA256: [UInt8], subject: String, issuer: String, notAfter: String) {
        self.der = der
        self.spkiSHA256 = spkiSHA256
        self.subject = subject
        self.issuer = issuer
        self.notAfter = notAfter
    }

    /// The certificate's pin. Not length-checked: a digest that is not 32 bytes (a TLS-layer bug)
    /// gives a pin that equals no configured pin, so it fails closed rather than trapping.
    public var pin: Pin { Pin(unchecked: spkiSHA256) }
}
