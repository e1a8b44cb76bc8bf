import COpenSSL
import Glibc

/// One OpenSSL client context per route policy: TLS 1.2 minimum, trust from the system
/// store (its hashed directory read on demand when that holds the whole bundle) plus the route's `ca:` files, and (for certificate pinning) a second store whose
/// only anchors are the pinned certificates. The handshake itself verifies nothing:
/// the gateway asks `verify` for exactly the validations its security policy needs, after
/// the handshake and before a byte of the request is sent. One OpenSSL security level
/// governs both the handshake and every verification (keys, signature digests).
public final class TLSClientContext: @unchecked Sendable {
    let ctx: OpaquePointer
    private let pinnedStore: OpaquePointer?
    /// OpenSSL security level of the handshake and the authentication level of `verify`.
    public let securityLevel: Int32
    /// How the system's trust anchors were added (`TLSClientContext+SystemTrust.swift`).
    public let systemTrust: SystemTrust

    /// `presentedChain`: no anchor and no verification, only the security level (see
    /// `securityLevelFailure(of:)`).
    public enum Anchors: Sendable { case defaultTrust, pinnedCertificates, presentedChain }

    public struct VerifyError: Error, Sendable, Equatable {
        public let code: Int32
        public let text: String
    }

    /// `caFiles`: extra trust (PEM bundles). `pinnedAnchors`: DER certificates that become
    /// the only anchors of `.pinnedCertificates` validations. `securityLevel`: OpenSSL's 0...5
    /// (2: RSA/DSA/DH >= 2048 bits, ECC >= 224 bits, no SHA-1 or MD5 signatures below the anchor).
    public init(caFiles: [String], pinnedAnchors: [[UInt8]], securityLevel: Int = 2) throws {
        IORuntime.setUp()
        guard (0...5).contains(securityLevel) else { throw IOError(.tls, "no OpenSSL security level \(securityLevel)") }
        guard let c = SSL_CTX_new(TLS_client_method()) else { throw IOError(.tls, "SSL_CTX_new failed") }
        ctx = c
        self.securityLevel = Int32(securityLevel)
        // Set, not inherited from openssl.cnf: the handshake's floor is the route's, never lower by accident.
        SSL_CTX_set_security_level(c, Int32(securityLevel))
        _ = airlock_SSL_CTX_set_min_proto_version(c, airlock_TLS1_2_VERSION())
        _ = airlock_SSL_CTX_set_mode(c, airlock_SSL_MODE_partial_moving())
        TLSSession.configureRecordBuffers(of: c)
        airlock_SSL_CTX_refuse_renegotiation(c)
        SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nil)
        systemTrust = Self.addSystemTrust(to: c)
        for f in caFiles where SSL_CTX_load_verify_locations(c, f, nil) != 1 {
            ERR_clear_error()
            SSL_CTX_free(c)
            throw IOError(.tls, "cannot load CA file \(f)")
        }
        _ = airlock_SSL_CTX_set_client_session_cache(c)
        SSL_CTX_sess_set_new_cb(c, tlsNewSessionCallback)
        if pinnedAnchors.isEmpty {
            pinnedStore = nil
        } else {
            let store = X509_STORE_new()!
            for der in pinnedAnchors {
                der.withUnsafeBufferPointer { p in
                    var cursor: UnsafePointer<UInt8>? = p.baseAddress
                    if let x = d2i_X509(nil, &cursor, p.count) {
                        X509_STORE_add_cert(store, x)
                        X509_free(x)
                    }
                }
            }
            pinnedStore = store
        }
    }

    deinit {
        if let s = pinnedStore { X509_STORE_free(s) }
        SSL_CTX_free(ctx)
    }

    /// Verifies the chain the server presented against `anchors`, checking `hostname`
    /// (DNS name or IP literal; never the subject CN) when given, at this context's security
    /// level. Returns the chain as OpenSSL built it, leaf first and anchor last
    /// (`.presentedChain`: the chain as presented, checked for the level only).
    func verify(peerChain: OpaquePointer, anchors: Anchors, hostname: String?) -> Result<[PeerCertificate], VerifyError> {
        guard airlock_sk_X509_num(peerChain) > 0, let leaf = airlock_sk_X509_value(peerChain, 0) else {
            return .failure(VerifyError(code: -1, text: "no certificate presented"))
        }
        let store: OpaquePointer
        switch anchors {
        case .presentedChain:
            if let failure = securityLevelFailure(of: peerChain) { return .failure(failure) }
            var out: [PeerCertificate] = []
            for i in 0..<airlock_sk_X509_num(peerChain) {
                if let x = airlock_sk_X509_value(peerChain, i) { out.append(PeerCertificate(x)) }
            }
            return .success(out)
        case .defaultTrust: store = SSL_CTX_get_cert_store(ctx)
        case .pinnedCertificates:
            guard let s = pinnedStore else { return .failure(VerifyError(code: -1, text: "no pinned certificates")) }
            store = s
        }
        guard let sctx = X509_STORE_CTX_new() else { return .failure(VerifyError(code: -1, text: "out of memory")) }
        defer { X509_STORE_CTX_free(sctx) }
        guard X509_STORE_CTX_init(sctx, store, leaf, peerChain) == 1 else {
            return .failure(VerifyError(code: -1, text: "X509_STORE_CTX_init failed"))
        }
        X509_STORE_CTX_set_default(sctx, "ssl_server")
        let param = X509_STORE_CTX_get0_param(sctx)
        // Without an authentication level X509_verify_cert checks no key size or signature digest
        // (a handshake sets it from the SSL's level; this call is outside any handshake).
        X509_VERIFY_PARAM_set_auth_level(param, securityLevel)
        if anchors == .pinnedCertificates {
            // A pinned intermediate or leaf is an anchor of its own.
            X509_VERIFY_PARAM_set_flags(param, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        }
        if let hostname {
            let bare = hostname.hasPrefix("[") ? String(hostname.dropFirst().dropLast()) : hostname
            if SocketAddress(ipLiteral: bare, port: 0) != nil {
                X509_VERIFY_PARAM_set1_ip_asc(param, bare)
            } else {
                X509_VERIFY_PARAM_set_hostflags(param, UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
                X509_VERIFY_PARAM_set1_host(param, bare, 0)
            }
        }
        if X509_verify_cert(sctx) == 1, let chain = X509_STORE_CTX_get0_chain(sctx) {
            var out: [PeerCertificate] = []
            for i in 0..<airlock_sk_X509_num(chain) {
                if let x = airlock_sk_X509_value(chain, i) { out.append(PeerCertificate(x)) }
            }
            return .success(out)
        }
        let code = X509_STORE_CTX_get_error(sctx)
        ERR_clear_error()
        return .failure(VerifyError(code: code, text: String(cString: X509_verify_cert_error_string(Int(code)))))
    }
}

/// A new TLS session from a server (TLS 1.3 tickets arrive after the handshake): handed
/// to the session that owns the connection, which takes OpenSSL's reference (returns 1).
private let tlsNewSessionCallback: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32 = { ssl, session in
    guard let ssl, let session, let p = airlock_SSL_get_app_data(ssl) else { return 0 }
    Unmanaged<TLSSession>.fromOpaque(p).takeUnretainedValue().offer(session)
    return 1
}
