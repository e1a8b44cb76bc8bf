import COpenSSL
import Glibc

/// The system's trust anchors, the way `SSL_CTX_set_default_verify_paths` finds them (the
/// bundle file, then the hashed directory, then the same directory as an OSSL_STORE), without
/// parsing the whole bundle into every context when the directory already holds each of its
/// certificates: the directory lookups load a CA from disk the first time a chain needs it.
///
/// The bundle (`SSL_CERT_FILE` or OpenSSL's default, Debian's 147 CAs) parsed into an
/// X509_STORE is ~870 KiB of heap and 1.5 MiB of RSS per context. With every certificate of the
/// bundle also in the directory, the store that `verify` consults offers the same anchors either
/// way, so every verification result is the same; anything else (a bundle certificate missing
/// from the directory, a block that is not a plain `CERTIFICATE`, a bundle OpenSSL cannot read
/// to the end) keeps the bundle loaded exactly as before.
extension TLSClientContext {
    /// Where a context's system trust comes from.
    public enum SystemTrust: Sendable, Equatable {
        /// The hashed directory (and the OSSL_STORE over it), read on demand: the bundle's
        /// certificates are all in it, or there is no bundle.
        case directory
        /// The bundle loaded whole, then the directory: what `SSL_CTX_set_default_verify_paths` does.
        case bundleAndDirectory
    }

    /// The bundle file and the directories OpenSSL would use: `SSL_CERT_FILE` / `SSL_CERT_DIR`
    /// (a colon-separated list) when set, else the library's compiled-in defaults.
    static func systemTrustLocations() -> (bundle: String, directories: [String]) {
        let bundle = environment(X509_get_default_cert_file_env()) ?? String(cString: X509_get_default_cert_file())
        let dirs = environment(X509_get_default_cert_dir_env()) ?? String(cString: X509_get_default_cert_dir())
        return (bundle, dirs.split(separator: ":").map(String.init))
    }

    private static func environment(_ name: UnsafePointer<CChar>) -> String? {
        guard let v = getenv(name) else { return nil }
        return String(cString: v)
    }

    /// Adds the system trust to the context's store and says how.
    static func addSystemTrust(to ctx: OpaquePointer) -> SystemTrust {
        let (file, directories) = systemTrustLocations()
        guard bundle(file, isCoveredBy: directories) else {
            SSL_CTX_set_default_verify_paths(ctx)
            return .bundleAndDirectory
        }
        // The two lookups X509_STORE_set_default_paths adds after the file, in its order, with
        // the same arguments (nil: the environment or the default, as above).
        let store = SSL_CTX_get_cert_store(ctx)
        if let dir = X509_STORE_add_lookup(store, X509_LOOKUP_hash_dir()) {
            _ = X509_LOOKUP_ctrl(dir, X509_L_ADD_DIR, nil, Int(X509_FILETYPE_DEFAULT), nil)
        }
        if let uri = X509_STORE_add_lookup(store, X509_LOOKUP_store()) {
            _ = X509_LOOKUP_ctrl(uri, X509_L_ADD_STORE, nil, 0, nil)
        }
        ERR_clear_error()
        return .directory
    }

    /// Whether the hashed `directories` offer exactly the PEM bundle's certificates under each of
    /// their subject hashes: every certificate of the bundle is in a `<hash>.<n>` file (as
    /// `openssl rehash` / update-ca-certificates name them), and those files hold nothing the
    /// bundle does not (for a subject the bundle has, OpenSSL used to find the bundle's
    /// certificates and never open the directory). Every block on either side must be a plain
    /// `CERTIFICATE` (no trust settings, no CRL). The bundle is read one block at a time, so the
    /// check never holds it; what it keeps is a SHA-256 per certificate. True when there is no
    /// bundle (OpenSSL then loads nothing from it either).
    static func bundle(_ path: String, isCoveredBy directories: [String]) -> Bool {
        if access(path, F_OK) != 0 { return true }
        guard !directories.isEmpty, let bundle = certificates(inPEMFile: path, subjectHashes: true) else { return false }
        var unseen = Set(bundle.keys)
        for hash in Set(bundle.values) {
            for directory in directories {
                var n = 0
                while access("\(directory)/\(hash).\(n)", F_OK) == 0 {
                    guard let held = certificates(inPEMFile: "\(directory)/\(hash).\(n)", subjectHashes: false) else { return false }
                    for digest in held.keys {
                        guard bundle[digest] != nil else { return false }
                        unseen.remove(digest)
                    }
                    n += 1
                }
            }
        }
        return unseen.isEmpty
    }

    /// The SHA-256 of each certificate's DER in a PEM file, with its subject hash as a hashed
    /// directory names it (8 lowercase hex digits; parsed only when `subjectHashes`, else "");
    /// nil when a block is not a plain `CERTIFICATE` or the file cannot be read to its end.
    static func certificates(inPEMFile path: String, subjectHashes: Bool) -> [[UInt8]: String]? {
        guard let bio = BIO_new_file(path, "r") else { ERR_clear_error(); return nil }
        defer { BIO_free(bio) }
        ERR_clear_error()
        var out: [[UInt8]: String] = [:]
        while true {
            var name: UnsafeMutablePointer<CChar>?
            var header: UnsafeMutablePointer<CChar>?
            var data: UnsafeMutablePointer<UInt8>?
            var length = 0
            guard PEM_read_bio(bio, &name, &header, &data, &length) == 1 else { break }
            defer { airlock_OPENSSL_free(name); airlock_OPENSSL_free(header); airlock_OPENSSL_free(data) }
            guard let name, String(cString: name) == "CERTIFICATE", let data else { return nil }
            var digest = [UInt8](repeating: 0, count: 32)
            var size: UInt32 = 0
            guard EVP_Digest(data, length, &digest, &size, EVP_sha256(), nil) == 1, size == 32 else { ERR_clear_error(); return nil }
            guard subjectHashes else { out[digest] = ""; continue }
            var cursor: UnsafePointer<UInt8>? = UnsafePointer(data)
            guard let cert = d2i_X509(nil, &cursor, length) else { ERR_clear_error(); return nil }
            let hash = String(X509_subject_name_hash(cert), radix: 16)
            X509_free(cert)
            out[digest] = String(repeating: "0", count: max(0, 8 - hash.count)) + hash
        }
        // The loop ends at the end of the file (no further BEGIN line) or at a block it cannot
        // read; only the first means every block was seen.
        let reason = ERR_GET_REASON(ERR_peek_last_error())
        ERR_clear_error()
        return reason == PEM_R_NO_START_LINE ? out : nil
    }
}
