import AirlockConfig
import AirlockIO
import Synchronization
import AirlockSecurity

/// The gateway's OpenSSL client contexts by trust identity (policy + CA files), shared
/// by all workers (an SSL_CTX is thread-safe) and created the first time a route needs
/// one. The CA files were read and checked when the configuration loaded.
final class TLSContexts: Sendable {
    private let contexts = Mutex<[String: TLSClientContext]>([:])

    func context(for security: RouteSecurity) throws -> TLSClientContext {
        try contexts.withLock { all in
            if let c = all[security.trustIdentity] { return c }
            let c = try TLSClientContext(caFiles: security.caFiles, pinnedAnchors: security.policy.pinnedCertificates,
                                         securityLevel: security.policy.minimumSecurityLevel)
            all[security.trustIdentity] = c
            return c
        }
    }
}
