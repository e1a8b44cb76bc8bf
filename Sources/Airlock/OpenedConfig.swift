public import AirlockConfig
public import AirlockIO
import AirlockSecurity

/// The configuration with the files it names opened: the gateway's step after
/// `AirlockConfig.load`, which reads and validates but opens nothing. `airlock run` and
/// `airlock check-config` open, before anything listens:
///
/// - `ca:`: the CA certificate and key, checked (a key readable by others, a certificate that
///   is not a CA, a key that does not match, an unreadable file), and the TLS server context
///   intercepted tunnels present its leaves with;
/// - each route's `security.certificates`: read, and the route's policy completed with their
///   DER and public-key pins (`RouteSecurity.completePolicy`);
/// - each route's `security.ca` bundle: read once, to check it.
///
/// Every problem is a `ConfigError` issue at the key path of the setting that named the file.
public struct OpenedConfig: Sendable {
    /// The configuration, every route's security policy complete.
    public private(set) var config: AirlockConfig
    /// `ca:` opened; nil without one.
    public let ca: OpenedCA?

    public init(opening config: AirlockConfig) throws(ConfigError) {
        var issues: [ConfigError.Issue] = []
        var config = config
        for i in config.routes.indices {
            Self.openSecurity(&config.routes[i].security, at: "routes[\(i)].security", issues: &issues)
        }
        var ca: OpenedCA?
        if let files = config.ca {
            do throws(IOError) {
                ca = try OpenedCA(files)
            } catch {
                switch error.code {
                case .caKey: issues.append(ConfigError.Issue(keyPath: "ca.key", message: error.detail))
                case .caCertificate: issues.append(ConfigError.Issue(keyPath: "ca.certificate", message: error.detail))
                default: issues.append(ConfigError.Issue(keyPath: "ca", message: error.detail))
                }
            }
        }
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
        self.config = config
        self.ca = ca
    }

    /// Reads the route's pinned certificates and CA bundle; completes its policy when both read.
    private static func openSecurity(_ security: inout RouteSecurity, at path: String, issues: inout [ConfigError.Issue]) {
        let before = issues.count
        var certDER: [[UInt8]] = []
        var certPins: [Pin] = []
        for (i, files) in security.certificateFiles.enumerated() {
            for f in files {
                do {
                    for cert in try PeerCertificate.load(file: f) {
                        certDER.append(cert.der)
                        if let pin = try? Pin(digest: cert.spkiSHA256) { certPins.append(pin) }
                    }
                } catch {
                    issues.append(ConfigError.Issue(keyPath: "\(path).certificates[\(i)]", message: "\(error)"))
                }
            }
        }
        for f in security.caFiles {
            do { _ = try PeerCertificate.load(file: f) } catch {
                issues.append(ConfigError.Issue(keyPath: path + ".ca", message: "\(error)"))
            }
        }
        // A file that failed is reported once; no follow-on issue from the policy.
        guard issues.count == before, security.needsCertificates else { return }
        do throws(SecurityConfigError) {
            try security.completePolicy(certificates: certDER, certificatePins: certPins)
        } catch {
            issues.append(ConfigError.Issue(keyPath: "\(path).\(error.key)", message: error.message))
        }
    }
}

/// `ca:` opened: the local CA, loaded and checked, and the TLS server context for intercepted
/// tunnels (shared by all workers): pass it to `Stream.startServerTLS(_:fallbackName:)`.
public struct OpenedCA: Sendable {
    public let authority: CertificateAuthority
    public let serverContext: TLSServerContext

    /// `IOError.code` says which file failed: `.caKey` or `.caCertificate` (the message names the path).
    init(_ files: CAConfig) throws(IOError) {
        authority = try CertificateAuthority(certificateFile: files.certificate, keyFile: files.key)
        serverContext = try TLSServerContext(authority: authority, leafCacheSize: files.leafCacheSize)
    }
}
