import AirlockYAML

extension ConfigReader {
    static let caKeys = ["certificate", "key", "leaf_cache_size"]

    /// `ca: { certificate: certs/airlock-ca.pem, key: certs/airlock-ca.key, leaf_cache_size: 1000 }`.
    /// Reads the CA's paths; the gateway opens the files at start (`OpenedConfig`), where a key
    /// readable by others, a certificate that is not a CA, a key that does not match, or an
    /// unreadable file fails at `ca.key` or `ca.certificate`.
    mutating func readCA(_ fields: [String: Node], into config: inout AirlockConfig) {
        guard let node = fields["ca"], let sub = mapping(node, at: "ca", allowed: Self.caKeys) else { return }
        let before = issues.count
        let certificate = sub["certificate"].flatMap { scalar($0, at: "ca.certificate") }
        let key = sub["key"].flatMap { scalar($0, at: "ca.key") }
        if sub["certificate"] == nil { fail("ca.certificate", "required: the CA certificate (PEM), e.g. certs/airlock-ca.pem") }
        if sub["key"] == nil { fail("ca.key", "required: the CA private key (PEM, mode 0600), e.g. certs/airlock-ca.key") }
        var size = CAConfig.defaultLeafCacheSize
        if let n = sub["leaf_cache_size"], let text = scalar(n, at: "ca.leaf_cache_size") {
            if let count = ConfigSyntax.parseCount(text), CAConfig.leafCacheSizeRange.contains(count) {
                size = count
            } else {
                fail("ca.leaf_cache_size", "expected an integer 1...\(CAConfig.leafCacheSizeRange.upperBound), got \"\(text)\"")
            }
        }
        guard issues.count == before, let certificate, let key else { return }
        config.ca = CAConfig(certificate: certificate, key: key, leafCacheSize: size)
    }
}
