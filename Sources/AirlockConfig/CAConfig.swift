/// `ca:` (top level): the files of the local CA that signs the leaf certificates Airlock presents
/// on intercepted CONNECT tunnels. Loading the configuration reads the paths; the gateway opens
/// and checks the files at start (`OpenedConfig`: key file private, a CA certificate, the key
/// matching it). Relative paths are taken from the working directory, as every other file path
/// in the configuration.
public struct CAConfig: Sendable, Equatable {
    /// `ca.certificate`: the CA certificate (PEM), the file clients are given to trust.
    public let certificate: String
    /// `ca.key`: its private key (PEM), mode 0600 or stricter.
    public let key: String
    /// `ca.leaf_cache_size`: minted leaves kept per name (least recently used forgotten first).
    public let leafCacheSize: Int

    public static let leafCacheSizeRange = 1...1_000_000
    /// `ca.leaf_cache_size` when absent.
    public static let defaultLeafCacheSize = 1000

    public init(certificate: String, key: String, leafCacheSize: Int = CAConfig.defaultLeafCacheSize) {
        self.certificate = certificate
        self.key = key
        self.leafCacheSize = leafCacheSize
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
