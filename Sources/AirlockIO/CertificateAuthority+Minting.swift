import COpenSSL
import Glibc

/// Leaf certificates for intercepted connections: ECDSA P-256 (the CA instance's leaf key),
/// SAN = the DNS name or IP address, CN = a DNS name that fits CN's 64 bytes (none otherwise), EKU
/// serverAuth, CA:FALSE, SKI/AKI, a random positive 127-bit serial, valid from an hour ago
/// (clock skew) for 7 days but never past the CA, signed with SHA-256 by the CA key.
extension CertificateAuthority {
    static let leafValidity: Int = 7 * 86_400
    static let leafBackdate: Int = 3_600

    /// Mints a leaf for `name` (a DNS name or IP literal, brackets allowed). Throws
    /// `.leafName` for a name that is neither, `.mint` when OpenSSL fails.
    public func mintLeaf(for name: String) throws(IOError) -> LeafCertificate {
        try mint(LeafName(validating: name))
    }

    func mint(_ name: LeafName) throws(IOError) -> LeafCertificate {
        guard let x = X509_new() else { throw IOError(.mint, "X509_new failed") }
        guard X509_set_version(x, 2) == 1, setRandomSerial(x), setValidity(x), setNames(x, name),
              X509_set_pubkey(x, leafKey) == 1, addExtensions(x, name),
              X509_sign(x, key, EVP_sha256()) > 0 else {
            X509_free(x)
            throw IOError(.mint, "cannot mint a certificate for \(name.text): \(TLSSession.opensslError(fallback: "OpenSSL failed"))")
        }
        // X509_check_purpose fills the certificate's parsed-extension cache (its SANs), which
        // NAME_CONSTRAINTS_check reads: on a fresh certificate it would check nothing.
        if let nc = nameConstraints, X509_check_purpose(x, -1, 0) != 1 || NAME_CONSTRAINTS_check(x, nc) != X509_V_OK {
            X509_free(x)
            ERR_clear_error()
            let permitted = permittedNames.isEmpty ? "" : " (it permits \(permittedNames.joined(separator: ", ")))"
            throw IOError(.leafName, "the CA's name constraints do not permit \(name.text)\(permitted)")
        }
        return LeafCertificate(taking: x, name: name.text)
    }

    private func setRandomSerial(_ x: OpaquePointer) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { return false }
        bytes[0] = (bytes[0] & 0x7F) | 0x40   // positive, and never short
        guard let bn = BN_bin2bn(bytes, Int32(bytes.count), nil) else { return false }
        defer { BN_free(bn) }
        guard let serial = BN_to_ASN1_INTEGER(bn, nil) else { return false }
        defer { ASN1_INTEGER_free(serial) }
        return X509_set_serialNumber(x, serial) == 1
    }

    private func setValidity(_ x: OpaquePointer) -> Bool {
        guard X509_gmtime_adj(X509_getm_notBefore(x), -Self.leafBackdate) != nil,
              X509_gmtime_adj(X509_getm_notAfter(x), Self.leafValidity) != nil else { return false }
        if ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(certificate)) > 0 {
            return X509_set1_notAfter(x, X509_get0_notAfter(certificate)) == 1
        }
        return true
    }

    private func setNames(_ x: OpaquePointer, _ name: LeafName) -> Bool {
        guard let subject = X509_NAME_new() else { return false }
        defer { X509_NAME_free(subject) }
        // CN holds at most 64 bytes; a longer name lives in the SAN alone. An IP address lives
        // in the SAN alone too: a CN holding it would be read as a host name by name-constraint
        // checks (OpenSSL's, on a CA that permits the address) and fail them.
        if !Self.subjectIsEmpty(for: name) {
            guard X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, name.text, -1, -1, 0) == 1 else { return false }
        }
        return X509_set_subject_name(x, subject) == 1
            && X509_set_issuer_name(x, X509_get_subject_name(certificate)) == 1
    }

    /// Whether the leaf for `name` has no subject (an IP address, or a DNS name over CN's 64
    /// bytes): its names are in the SAN alone.
    static func subjectIsEmpty(for name: LeafName) -> Bool {
        name.kind != .dns || name.text.utf8.count > 64
    }

    private func addExtensions(_ x: OpaquePointer, _ name: LeafName) -> Bool {
        var ctx = X509V3_CTX()
        airlock_X509V3_set_ctx_nodb(&ctx)
        X509V3_set_ctx(&ctx, certificate, x, nil, nil, 0)
        // An empty subject makes the SAN critical (RFC 5280 4.2.1.6; Chromium refuses the leaf
        // otherwise, OpenSSL does not check).
        let san = (Self.subjectIsEmpty(for: name) ? "critical," : "") + name.subjectAltName
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_authority_key_identifier, "keyid:always"),
            (NID_subject_alt_name, san),
        ]
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else { return false }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x, ext, -1) == 1 else { return false }
        }
        return true
    }
}
