#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import AirlockIO
public import AirlockSecurity
import Yams

/// A route's `security:` block: the AFSecurityPolicy-style trust decision for TLS
/// upstreams, plus the files it was built from (kept for rendering and for the TLS layer).
public struct RouteSecurity: Sendable, Equatable {
    public var policy: SecurityPolicy
    /// `ca:` bundles added to the system trust for this route.
    public var caFiles: [String]
    /// `certificates:` as written (files or folders).
    public var certificatePaths: [String]
    /// `pins:` as written.
    public var pinTexts: [String]

    public static let `default` = RouteSecurity(policy: .default, caFiles: [], certificatePaths: [], pinTexts: [])

    /// Identity of everything that decides trust: the policy and the extra CA files.
    /// TLS sessions and pooled TLS connections are shared only under the same identity.
    public var trustIdentity: String { policy.cacheKey + ";ca=" + caFiles.joined(separator: ",") }
}

extension ConfigReader {
    static let securityKeys = [
        "pinning", "pins", "certificates", "pin_scope", "allow_invalid_certificates", "validates_domain_name", "ca",
        "min_security_level",
    ]

    /// Reads `security:` (at `path`), loading certificate files and deriving their pins.
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
        var certDER: [[UInt8]] = []
        var certPins: [Pin] = []
        for (i, p) in certPaths.enumerated() {
            let files = CertificateFiles.expand(p)
            if files.isEmpty {
                fail("\(path).certificates[\(i)]", "no certificate files (.cer, .der, .pem, .crt) at \(p)")
            }
            for f in files {
                do {
                    for cert in try PeerCertificate.load(file: f) {
                        certDER.append(cert.der)
                        if let pin = try? Pin(digest: cert.spkiSHA256) { certPins.append(pin) }
                    }
                } catch {
                    fail("\(path).certificates[\(i)]", "\(error)")
                }
            }
        }
        var caFiles: [String] = []
        if let n = fields["ca"], let text = scalar(n, at: path + ".ca") {
            let files = CertificateFiles.expand(text)
            if files.isEmpty { fail(path + ".ca", "no CA certificate file at \(text)") }
            for f in files {
                do { _ = try PeerCertificate.load(file: f) } catch { fail(path + ".ca", "\(error)") }
            }
            caFiles = files
        }
        // A pin or file that failed is reported once; no follow-on issue from the policy.
        guard issues.count == issuesBefore else { return nil }
        do throws(SecurityConfigError) {
            let policy = try SecurityPolicy(mode: mode, pins: pins, pinnedCertificates: certDER, certificatePins: certPins,
                                            pinScope: scope, allowInvalidCertificates: allowInvalid,
                                            validatesDomainName: validatesDomain, minimumSecurityLevel: level)
            return RouteSecurity(policy: policy, caFiles: caFiles, certificatePaths: certPaths, pinTexts: pinTexts)
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
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [path] }
        let exts = [".cer", ".der", ".pem", ".crt"]
        return names.filter { name in exts.contains { name.lowercased().hasSuffix($0) } }
            .sorted().map { path.hasSuffix("/") ? path + $0 : path + "/" + $0 }
    }
}
