public import AirlockIO

/// `ca:` (top level): the local CA that signs the leaf certificates Airlock presents on
/// intercepted CONNECT tunnels. Loading the configuration loads and checks the CA (key file
/// private, a CA certificate, the key matching it); relative paths are taken from the
/// working directory, as every other file path in the configuration.
public struct CAConfig: Sendable, Equatable {
    /// `ca.certificate`: the CA certificate (PEM), the file clients are given to trust.
    public let certificate: String
    /// `ca.key`: its private key (PEM), mode 0600 or stricter.
    public let key: String
    /// `ca.leaf_cache_size`: minted leaves kept per name (least recently used forgotten first).
    public let leafCacheSize: Int
    /// The loaded CA.
    public let authority: CertificateAuthority
    /// The TLS server context for intercepted tunnels (shared by all workers): pass it to
    /// `Stream.startServerTLS(_:fallbackName:)`.
    public let serverContext: TLSServerContext

    public static let leafCacheSizeRange = 1...1_000_000

    /// Loads and checks the CA. `IOError.code` says which file failed: `.caKey` or
    /// `.caCertificate` (the message names the path).
    public init(certificate: String, key: String,
                leafCacheSize: Int = TLSServerContext.defaultLeafCacheSize) throws(IOError) {
        self.certificate = certificate
        self.key = key
        self.leafCacheSize = leafCacheSize
        authority = try CertificateAuthority(certificateFile: certificate, keyFile: key)
        serverContext = try TLSServerContext(authority: authority, leafCacheSize: leafCacheSize)
    }

    /// Equal when the same files hold the same CA.
    public static func == (a: CAConfig, b: CAConfig) -> Bool {
        a.certificate == b.certificate && a.key == b.key && a.leafCacheSize == b.leafCacheSize
            && a.authority.fingerprint == b.authority.fingerprint
    }
}

extension AirlockConfig {
    func renderCAYAML() -> [String] {
        guard let ca else { return [] }
        return ["ca:",
                "  certificate: \(Self.yamlScalar(ca.certificate))",
                "  key: \(Self.yamlScalar(ca.key))",
                "  leaf_cache_size: \(ca.leafCacheSize)"]
    }
}
