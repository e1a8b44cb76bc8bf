import COpenSSL
import Glibc

/// The local CA that signs the leaf certificates Airlock presents when it intercepts a
/// CONNECT tunnel: its certificate and private key, loaded from PEM files and checked at
/// load (key file private to its owner, a CA certificate allowed to sign certificates,
/// the key matching it), plus the one ECDSA P-256 key pair every leaf of this instance
/// carries (as mitmproxy does: minting then costs one signature, no key generation).
///
/// Immutable after load and shared by all workers; OpenSSL signs with a shared key safely.
/// Minting is in `CertificateAuthority+Minting`, making a new CA in `+Creation`.
public final class CertificateAuthority: @unchecked Sendable {
    /// X509* and EVP_PKEY*s, owned.
    let certificate: OpaquePointer
    let key: OpaquePointer
    let leafKey: OpaquePointer
    public let certificatePath: String
    public let keyPath: String
    /// RFC 2253, e.g. `CN=Airlock Local CA,O=Airlock`.
    public let subject: String
    /// SHA-256 of the DER certificate, uppercase hex with colons (as `openssl x509 -fingerprint -sha256`).
    public let fingerprint: String
    /// The certificate's notAfter as OpenSSL prints it (`Nov 25 14:18:20 2036 GMT`).
    public let expiry: String
    /// The certificate's notAfter in seconds since 1970.
    public let expirySeconds: Int64
    /// The certificate's name constraints (NAME_CONSTRAINTS*, owned), nil without: a leaf
    /// they do not permit is never minted (clients would refuse it anyway).
    let nameConstraints: UnsafeMutablePointer<NAME_CONSTRAINTS>?
    /// The permitted names, as `ca show` prints them (empty without a constraint).
    public let permittedNames: [String]

    /// Loads and checks the CA. Every error names the offending file: `.caKey` for the key
    /// file (unreadable, readable by group or others, not a key, not the certificate's key),
    /// `.caCertificate` for the certificate file (unreadable, not PEM, not a CA).
    public init(certificateFile: String, keyFile: String) throws(IOError) {
        IORuntime.setUp()
        try Self.checkPrivate(keyFile)
        let cert = try Self.readCertificate(certificateFile)
        guard let pkey = Self.readKey(keyFile) else {
            X509_free(cert)
            throw IOError(.caKey, "\(keyFile) holds no PEM private key (or one protected by a passphrase)")
        }
        guard X509_check_private_key(cert, pkey) == 1 else {
            ERR_clear_error()
            X509_free(cert)
            EVP_PKEY_free(pkey)
            throw IOError(.caKey, "the key in \(keyFile) does not match the certificate \(certificateFile)")
        }
        guard let leaf = airlock_EVP_EC_gen_P256() else {
            X509_free(cert)
            EVP_PKEY_free(pkey)
            throw IOError(.mint, "cannot generate the leaf key pair: \(TLSSession.opensslError(fallback: "EVP_EC_gen failed"))")
        }
        certificate = cert
        key = pkey
        leafKey = leaf
        certificatePath = certificateFile
        keyPath = keyFile
        subject = PeerCertificate.name(X509_get_subject_name(cert))
        fingerprint = Self.fingerprint(cert)
        expiry = PeerCertificate.time(X509_get0_notAfter(cert))
        expirySeconds = Self.seconds(X509_get0_notAfter(cert))
        nameConstraints = X509_get_ext_d2i(cert, NID_name_constraints, nil, nil)?.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
        permittedNames = Self.permittedNames(cert)
    }

    deinit {
        if let nc = nameConstraints { NAME_CONSTRAINTS_free(nc) }
        X509_free(certificate)
        EVP_PKEY_free(key)
        EVP_PKEY_free(leafKey)
    }

    /// The CA certificate as PEM (what clients are given to trust).
    public var certificatePEM: String { Self.pem(certificate) }

    // MARK: load checks

    /// A CA key readable by group or others is refused: anyone who reads it can mint
    /// certificates every client of this Airlock trusts.
    static func checkPrivate(_ path: String) throws(IOError) {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw IOError(.caKey, "cannot read \(path): \(String(cString: strerror(errno)))", errno: errno)
        }
        let mode = st.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw IOError(.caKey, "\(path) has mode \(String(mode, radix: 8, uppercase: false).leftPadded(to: 4)): "
                + "a CA key must not be readable by group or others (chmod 600 \(path))")
        }
    }

    static func readCertificate(_ path: String) throws(IOError) -> OpaquePointer {
        guard let bio = BIO_new_file(path, "rb") else {
            ERR_clear_error()
            throw IOError(.caCertificate, "cannot read \(path): \(String(cString: strerror(errno)))", errno: errno)
        }
        defer { BIO_free(bio) }
        guard let x = PEM_read_bio_X509(bio, nil, nil, nil) else {
            ERR_clear_error()
            throw IOError(.caCertificate, "\(path) holds no PEM certificate")
        }
        let flags = X509_get_extension_flags(x)
        guard flags & airlock_EXFLAG_BCONS() != 0, flags & airlock_EXFLAG_CA() != 0 else {
            X509_free(x)
            throw IOError(.caCertificate, "\(path) is not a CA certificate (basicConstraints CA:TRUE is required)")
        }
        if flags & airlock_EXFLAG_KUSAGE() != 0 && X509_get_key_usage(x) & airlock_KU_KEY_CERT_SIGN() == 0 {
            X509_free(x)
            throw IOError(.caCertificate, "\(path) may not sign certificates (its keyUsage lacks keyCertSign)")
        }
        return x
    }

    static func readKey(_ path: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "rb") else {
            ERR_clear_error()
            return nil
        }
        defer { BIO_free(bio) }
        let key = PEM_read_bio_PrivateKey(bio, nil, noPassphrase, nil)
        ERR_clear_error()
        return key
    }

    // MARK: facts

    static func fingerprint(_ x: OpaquePointer) -> String {
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        guard X509_digest(x, EVP_sha256(), &digest, &length) == 1 else { return "" }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for (i, b) in digest.prefix(Int(length)).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ":")) }
            out.append(hex[Int(b >> 4)])
            out.append(hex[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The permitted subtrees of the certificate's name constraints, as OpenSSL prints them
    /// (`DNS:example.test`, `IP:127.0.0.1/255.255.255.255`); empty without the extension.
    static func permittedNames(_ cert: OpaquePointer) -> [String] {
        let index = X509_get_ext_by_NID(cert, NID_name_constraints, -1)
        guard index >= 0, let ext = X509_get_ext(cert, index), let bio = BIO_new(BIO_s_mem()) else { return [] }
        defer { BIO_free(bio) }
        guard X509V3_EXT_print(bio, ext, 0, 0) == 1 else { return [] }
        var names: [String] = []
        var inPermitted = false
        for line in PeerCertificate.readAll(bio).split(separator: "\n") {
            let text = String(line.drop { $0 == " " })
            if text.hasSuffix(":") && !text.contains(" ") && !text.hasPrefix("DNS") && !text.hasPrefix("IP") {
                inPermitted = text == "Permitted:"
            } else if inPermitted && !text.isEmpty {
                names.append(text)
            }
        }
        return names
    }

    static func seconds(_ t: UnsafePointer<ASN1_TIME>?) -> Int64 {
        var parts = tm()
        guard let t, ASN1_TIME_to_tm(t, &parts) == 1 else { return 0 }
        return Int64(timegm(&parts))
    }

    static func pem(_ x: OpaquePointer) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        PEM_write_bio_X509(bio, x)
        return PeerCertificate.readAll(bio)
    }
}

/// Never prompts on a terminal for a passphrase: an encrypted key fails to load.
private let noPassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in
    -1
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
