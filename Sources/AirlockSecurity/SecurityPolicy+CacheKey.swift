extension SecurityPolicy {
    /// Everything that changes which servers are trusted, and nothing else (a security level other
    /// than the default included, so each level gets its own TLS context): pins and certificates
    /// as sorted sets, certificate DER by SHA-256, pins only in public-key mode and certificates
    /// only in certificate mode (the other is unused there).
    static func makeCacheKey(
        mode: PinningMode, pins: Set<Pin>, pinnedCertificates: Set<[UInt8]>, pinScope: PinScope,
        allowInvalidCertificates: Bool, validatesDomainName: Bool, minimumSecurityLevel: Int
    ) -> String {
        var key = "pinning=\(mode.rawValue);scope=\(pinScope.rawValue)"
        key += ";allow-invalid=\(allowInvalidCertificates ? 1 : 0);validate-name=\(validatesDomainName ? 1 : 0)"
        if minimumSecurityLevel != defaultSecurityLevel { key += ";level=\(minimumSecurityLevel)" }
        switch mode {
        case .none:
            break
        case .publicKey:
            key += ";pins=" + pins.map(\.description).sorted().joined(separator: ",")
        case .certificate:
            key += ";certificates=" + pinnedCertificates.map { hex(SHA256.hash($0)) }.sorted().joined(separator: ",")
        }
        return key
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
