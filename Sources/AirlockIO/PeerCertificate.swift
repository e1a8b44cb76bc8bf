import COpenSSL

/// What the TLS layer knows of one certificate: its DER, the SHA-256 of its DER
/// SubjectPublicKeyInfo (the pin), and printable names and expiry.
public struct PeerCertificate: Sendable, Equatable {
    public var der: [UInt8]
    public var spkiSHA256: [UInt8]
    public var subject: String
    public var issuer: String
    public var notAfter: String

    init(_ x: OpaquePointer) {
        der = Self.encode(x) { i2d_X509($0, $1) }
        var spki: [UInt8] = []
        if let pub = X509_get_X509_PUBKEY(x) {
            spki = Self.encode(pub) { i2d_X509_PUBKEY($0, $1) }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        spki.withUnsafeBufferPointer { p in _ = SHA256(p.baseAddress, p.count, &digest) }
        spkiSHA256 = digest
        subject = Self.name(X509_get_subject_name(x))
        issuer = Self.name(X509_get_issuer_name(x))
        notAfter = Self.time(X509_get0_notAfter(x))
    }

    /// The certificates in a PEM or DER file (bundles too). Throws with the file's path.
    public static func load(file path: String) throws -> [PeerCertificate] {
        guard let bio = BIO_new_file(path, "rb") else {
            throw IOError(.tls, "cannot read certificate file \(path)")
        }
        defer { BIO_free(bio) }
        var out: [PeerCertificate] = []
        while let x = PEM_read_bio_X509(bio, nil, nil, nil) {
            out.append(PeerCertificate(x))
            X509_free(x)
        }
        ERR_clear_error()
        if out.isEmpty {
            // Not PEM: try one DER certificate.
            _ = BIO_ctrl(bio, BIO_CTRL_RESET, 0, nil)
            if let x = d2i_X509_bio(bio, nil) {
                out.append(PeerCertificate(x))
                X509_free(x)
            }
            ERR_clear_error()
        }
        if out.isEmpty { throw IOError(.tls, "no certificate in \(path) (expected PEM or DER)") }
        return out
    }

    static func encode(_ x: OpaquePointer, _ i2d: (OpaquePointer, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
        let n = i2d(x, nil)
        guard n > 0 else { return [] }
        var buf = [UInt8](repeating: 0, count: Int(n))
        buf.withUnsafeMutableBufferPointer { p in
            var cursor: UnsafeMutablePointer<UInt8>? = p.baseAddress
            _ = i2d(x, &cursor)
        }
        return buf
    }

    static func name(_ n: OpaquePointer?) -> String {
        guard let n, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, n, 0, airlock_XN_FLAG_RFC2253())
        return readAll(bio)
    }

    static func time(_ t: UnsafePointer<ASN1_TIME>?) -> String {
        guard let t, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        ASN1_TIME_print(bio, t)
        return readAll(bio)
    }

    static func readAll(_ bio: OpaquePointer) -> String {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 512)
        while true {
            let n = BIO_read(bio, &buf, Int32(buf.count))
            if n <= 0 { break }
            out.append(contentsOf: buf[0..<Int(n)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
