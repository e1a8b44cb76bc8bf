import COpenSSL
import Glibc

/// Making a new local CA (`airlock ca init`): an ECDSA P-256 key and a self-signed
/// certificate with basicConstraints CA:TRUE and keyUsage keyCertSign, cRLSign (both
/// critical), written as `airlock-ca.pem` (0644) and `airlock-ca.key` (created 0600,
/// never widened and narrowed after).
extension CertificateAuthority {
    public static let certificateFileName = "airlock-ca.pem"
    public static let keyFileName = "airlock-ca.key"

    /// What to do when the files already exist.
    public enum Overwrite: Sendable { case refuse, replace }

    /// Generates a CA into `directory` (created if missing) and loads it back. Throws
    /// `.exists` naming the file when one exists and `overwrite` is `.refuse`.
    /// `permitted`: DNS names (each permits itself and every name below it) and IP addresses
    /// the CA may certify, as a critical name constraint (RFC 5280 4.2.1.10): clients then
    /// refuse any other name it signs, so a stolen key cannot impersonate the rest of the web.
    /// Empty: no constraint. A name that is not a DNS name or IP literal is refused (`.leafName`).
    public static func create(inDirectory directory: String, overwrite: Overwrite,
                              validityDays: Int = 3650, permitted: [String] = []) throws(IOError) -> CertificateAuthority {
        IORuntime.setUp()
        var constraint: String?
        if !permitted.isEmpty {
            var parts: [String] = []
            for raw in permitted {
                let name = try LeafName(validating: raw)
                switch name.kind {
                case .dns: parts.append("permitted;DNS:\(name.text)")
                case .ipAddress:
                    let full = name.text.contains(":") ? "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" : "255.255.255.255"
                    parts.append("permitted;IP:\(name.text)/\(full)")
                }
            }
            constraint = "critical," + parts.joined(separator: ",")
        }
        let dir = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let certPath = (dir.isEmpty ? "." : dir) + "/" + certificateFileName
        let keyPath = (dir.isEmpty ? "." : dir) + "/" + keyFileName
        if overwrite == .refuse {
            for path in [certPath, keyPath] where access(path, F_OK) == 0 {
                throw IOError(.exists, "\(path) exists; pass --force to replace the CA (clients that trust it must then trust the new one)")
            }
        }
        if !dir.isEmpty && mkdir(dir, 0o755) != 0 && errno != EEXIST {
            throw IOError.errno(.write, "cannot create \(dir)")
        }
        guard let key = airlock_EVP_EC_gen_P256() else {
            throw IOError(.mint, "cannot generate the CA key: \(TLSSession.opensslError(fallback: "EVP_EC_gen failed"))")
        }
        defer { EVP_PKEY_free(key) }
        let cert = try selfSigned(key: key, validityDays: validityDays, nameConstraint: constraint)
        defer { X509_free(cert) }
        guard let keyPEM = pemBytes({ PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }),
              let certPEM = pemBytes({ PEM_write_bio_X509($0, cert) }) else {
            throw IOError(.mint, "cannot encode the CA as PEM")
        }
        try writeNew(keyPath, keyPEM, mode: 0o600)
        try writeNew(certPath, certPEM, mode: 0o644)
        return try CertificateAuthority(certificateFile: certPath, keyFile: keyPath)
    }

    private static func selfSigned(key: OpaquePointer, validityDays: Int, nameConstraint: String?) throws(IOError) -> OpaquePointer {
        guard let x = X509_new(), let subject = X509_NAME_new() else { throw IOError(.mint, "X509_new failed") }
        defer { X509_NAME_free(subject) }
        var random = [UInt8](repeating: 0, count: 20)
        _ = RAND_bytes(&random, Int32(random.count))
        random[0] = (random[0] & 0x7F) | 0x40
        let tag = random.suffix(4).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        var ok = X509_set_version(x, 2) == 1
        if ok, let bn = BN_bin2bn(random, Int32(random.count), nil) {
            if let serial = BN_to_ASN1_INTEGER(bn, nil) {
                ok = X509_set_serialNumber(x, serial) == 1
                ASN1_INTEGER_free(serial)
            } else { ok = false }
            BN_free(bn)
        } else { ok = false }
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -leafBackdate) != nil
            && X509_gmtime_adj(X509_getm_notAfter(x), validityDays * 86_400) != nil
            && X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC, "Airlock", -1, -1, 0) == 1
            && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, "Airlock Local CA \(tag)", -1, -1, 0) == 1
            && X509_set_subject_name(x, subject) == 1
            && X509_set_issuer_name(x, subject) == 1
            && X509_set_pubkey(x, key) == 1
        if ok {
            var ctx = X509V3_CTX()
            airlock_X509V3_set_ctx_nodb(&ctx)
            X509V3_set_ctx(&ctx, x, x, nil, nil, 0)
            let extensions: [(Int32, String)] = [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ] + (nameConstraint.map { [(NID_name_constraints, $0)] } ?? [])
            for (nid, value) in extensions where ok {
                guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else { ok = false; break }
                ok = X509_add_ext(x, ext, -1) == 1
                X509_EXTENSION_free(ext)
            }
        }
        guard ok, X509_sign(x, key, EVP_sha256()) > 0 else {
            X509_free(x)
            throw IOError(.mint, "cannot make the CA certificate: \(TLSSession.opensslError(fallback: "OpenSSL failed"))")
        }
        return x
    }

    private static func pemBytes(_ write: (OpaquePointer) -> Int32) -> [UInt8]? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        return Array(PeerCertificate.readAll(bio).utf8)
    }

    /// Writes `bytes` to a file created now with `mode` (an old one is removed first): the
    /// key is never, even for an instant, readable by others.
    private static func writeNew(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(IOError) {
        if unlink(path) != 0 && errno != ENOENT { throw IOError.errno(.write, "cannot replace \(path)") }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw IOError.errno(.write, "cannot create \(path)") }
        defer { Glibc.close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw IOError.errno(.write, "cannot write \(path)") }
            written += n
        }
        guard fsync(fd) == 0 else { throw IOError.errno(.write, "cannot sync \(path)") }
    }
}
