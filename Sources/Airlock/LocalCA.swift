import AirlockIO

/// `airlock ca init` and `airlock ca show`: the local CA that signs the certificates of
/// intercepted CONNECT tunnels (`ca:` in the configuration), as files in one folder.
public enum LocalCA {
    /// Makes a new CA in `directory`; `force` replaces existing files. Returns the lines to
    /// print. Throws `IOError` (`.exists` names the file that would have been overwritten).
    public static func initialize(directory: String, force: Bool, permit: [String] = []) throws -> String {
        let ca = try CertificateAuthority.create(inDirectory: directory, overwrite: force ? .replace : .refuse, permitted: permit)
        return "wrote \(ca.certificatePath) and \(ca.keyPath) (mode 0600)\n" + describe(ca)
            + "config:\n  ca:\n    certificate: \(ca.certificatePath)\n    key: \(ca.keyPath)\n"
    }

    /// Loads (and checks) the CA in `directory` and describes it.
    public static func show(directory: String) throws -> String {
        let dir = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let ca = try CertificateAuthority(certificateFile: dir + "/" + CertificateAuthority.certificateFileName,
                                          keyFile: dir + "/" + CertificateAuthority.keyFileName)
        return describe(ca)
    }

    static func describe(_ ca: CertificateAuthority) -> String {
        """
        subject: \(ca.subject)
        sha256 fingerprint: \(ca.fingerprint)
        expires: \(ca.expiry)
        permits: \(ca.permittedNames.isEmpty ? "any name (no name constraints)" : ca.permittedNames.joined(separator: ", "))
        certificate for clients to trust: \(ca.certificatePath)

        """
    }
}
