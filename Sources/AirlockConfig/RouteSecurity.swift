public import AirlockSecurity
import AirlockYAML

/// A route's `security:` block: the AFSecurityPolicy-style trust decision for TLS upstreams,
/// and the files it names.
///
/// Loading the configuration parses the block and checks that the files exist; it opens none.
/// A block that names no `certificates:` has its `policy` at once. One that does is completed by
/// the gateway at start (`OpenedConfig`), which reads the certificates and calls
/// `completePolicy(certificates:certificatePins:)`; until then `needsCertificates` is true and
/// `policy` may not be asked for.
public struct RouteSecurity: Sendable, Equatable {
    // The block's settings, for the policy and for rendering (the gateway reads `policy`).
    /// `pinning:`.
    var mode: PinningMode
    /// `pins:`, parsed.
    var pins: [Pin]
    /// `pin_scope:`.
    var pinScope: PinScope
    /// `allow_invalid_certificates:`.
    var allowInvalidCertificates: Bool
    /// `validates_domain_name:`.
    var validatesDomainName: Bool
    /// `min_security_level:`.
    var minimumSecurityLevel: Int
    /// `ca:` bundles added to the system trust for this route.
    public var caFiles: [String]
    /// `certificates:` as written (files or folders).
    public var certificatePaths: [String]
    /// The files each `certificates:` entry names (a folder's certificate files in name order).
    public var certificateFiles: [[String]]
    /// `pins:` as written.
    public var pinTexts: [String]
    /// The policy, once every input is known.
    fileprivate var completed: SecurityPolicy?

    public static let `default` = RouteSecurity(
        mode: .none, pins: [], pinScope: .chain, allowInvalidCertificates: false, validatesDomainName: true,
        minimumSecurityLevel: SecurityPolicy.defaultSecurityLevel, caFiles: [], certificatePaths: [],
        certificateFiles: [], pinTexts: [], completed: .default)

    /// True until the gateway has read the `certificates:` files into the policy.
    public var needsCertificates: Bool { completed == nil }

    /// The trust decision. Asking before the certificates are read is a programming error.
    public var policy: SecurityPolicy {
        guard let completed else {
            preconditionFailure("RouteSecurity.policy before its certificates were read (OpenedConfig)")
        }
        return completed
    }

    /// Identity of everything that decides trust: the policy and the extra CA files.
    /// TLS sessions and pooled TLS connections are shared only under the same identity.
    public var trustIdentity: String { policy.cacheKey + ";ca=" + caFiles.joined(separator: ",") }

    /// Builds the policy from the block and what the files under `certificates:` hold: each
    /// certificate's DER and the SPKI pin derived from it, in file order. Throws the policy's
    /// refusal (its `key` is relative to the block).
    public mutating func completePolicy(certificates: [[UInt8]], certificatePins: [Pin]) throws(SecurityConfigError) {
        completed = try SecurityPolicy(
            mode: mode, pins: pins, pinnedCertificates: certificates, certificatePins: certificatePins,
            pinScope: pinScope, allowInvalidCertificates: allowInvalidCertificates,
            validatesDomainName: validatesDomainName, minimumSecurityLevel: minimumSecurityLevel)
    }
}

extension ConfigReader {
    static let securityKeys = [
        "pinning", "pins", "certificates", "pin_scope", "allow_invalid_certificates", "validates_domain_name", "ca",
        "min_security_level",
    ]

    /// Reads `security:` (at `path`): the settings, the pins, and the paths of the certificate
    /// and CA files (which must exist; the gateway opens them).
    mutating func readSecurity(_ node: Node, at path: String) -> RouteSecurity? {
        guard let fields = mapping(node, at: path, allowed: Self.securityKeys) else { return nil }
        let issuesBefore = issues.count
        var mode = PinningMode.none
        if let n = fields["pinning"], let text = scalar(n, at: path + ".pinning") {
            guard let m = PinningMode(rawValue: text) else {
                fail(path + ".pinning", "expected none, public-key or certificate, got \"\(text)\"")
                return nil
            }
            mode = m
        }
        var scope = PinScope.chain
        if let n = fields["pin_scope"], let text = scalar(n, at: path + ".pin_scope") {
            guard let s = PinScope(rawValue: text) else {
                fail(path + ".pin_scope", "expected chain or leaf, got \"\(text)\"")
                return nil
            }
            scope = s
        }
        var allowInvalid = false
        var validatesDomain = true
        if let n = fields["allow_invalid_certificates"] {
            guard let b = readBool(n, at: path + ".allow_invalid_certificates") else { return nil }
            allowInvalid = b
        }
        if let n = fields["validates_domain_name"] {
            guard let b = readBool(n, at: path + ".validates_domain_name") else { return nil }
            validatesDomain = b
        }
        var level = SecurityPolicy.defaultSecurityLevel
        if let n = fields["min_security_level"], let text = scalar(n, at: path + ".min_security_level") {
            // Range and the pinning rule are the policy's to check (below); here only the syntax.
            guard let l = Int(text) else {
                fail(path + ".min_security_level", "expected an OpenSSL security level (an integer from 0 to 5), got \"\(text)\"")
                return nil
            }
            level = l
        }
        let pinTexts = stringList(fields["pins"], at: path + ".pins")
        var pins: [Pin] = []
        for (i, text) in pinTexts.enumerated() {
            do throws(SecurityConfigError) {
                pins.append(try Pin(parsing: text))
            } catch {
                fail("\(path).pins[\(i)]", error.message)
            }
        }
        let certPaths = stringList(fields["certificates"], at: path + ".certificates")
        var certFiles: [[String]] = []
        for (i, p) in certPaths.enumerated() {
            let files = CertificateFiles.expand(p)
            if files.isEmpty {
                fail("\(path).certificates[\(i)]", "no certificate files (.cer, .der, .pem, .crt) at \(p)")
            }
            certFiles.append(files)
        }
        var caFiles: [String] = []
        if let n = fields["ca"], let text = scalar(n, at: path + ".ca") {
            let files = CertificateFiles.expand(text)
            if files.isEmpty { fail(path + ".ca", "no CA certificate file at \(text)") }
            caFiles = files
        }
        // A pin or file that failed is reported once; no follow-on issue from the policy.
        guard issues.count == issuesBefore else { return nil }
        var security = RouteSecurity(
            mode: mode, pins: pins, pinScope: scope, allowInvalidCertificates: allowInvalid,
            validatesDomainName: validatesDomain, minimumSecurityLevel: level, caFiles: caFiles,
            certificatePaths: certPaths, certificateFiles: certFiles, pinTexts: pinTexts, completed: nil)
        // With certificates named, the policy waits for the gateway to read them (OpenedConfig).
        guard certPaths.isEmpty else { return security }
        do throws(SecurityConfigError) {
            try security.completePolicy(certificates: [], certificatePins: [])
            return security
        } catch {
            fail("\(path).\(error.key)", error.message)
            return nil
        }
    }

    /// A single string or a list of strings.
    private mutating func stringList(_ node: Node?, at path: String) -> [String] {
        guard let node else { return [] }
        if case .sequence(let items) = node {
            return items.enumerated().compactMap { scalar($1, at: "\(path)[\($0)]") }
        }
        return scalar(node, at: path).map { [$0] } ?? []
    }
}

/// Certificate files named by a config entry: the file itself, or a folder's
/// .cer/.der/.pem/.crt files in name order.
enum CertificateFiles {
    static func expand(_ path: String) -> [String] {
        guard LocalFile.exists(path) else { return [] }
        guard let names = LocalFile.directoryEntries(path) else { return [path] }
        let exts = [".cer", ".der", ".pem", ".crt"]
        return names.filter { name in exts.contains { name.lowercased().hasSuffix($0) } }
            .sorted().map { path.hasSuffix("/") ? path + $0 : path + "/" + $0 }
    }
}
