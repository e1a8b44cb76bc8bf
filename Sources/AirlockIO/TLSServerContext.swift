import COpenSSL
import Glibc
import Synchronization

/// The OpenSSL server context for intercepted connections: TLS 1.2 minimum, no session
/// resumption (every handshake picks its certificate), ALPN `http/1.1` when the client
/// offers it and no ALPN otherwise (Airlock parses HTTP/1.1 only; a client offering
/// `h2, http/1.1` gets http/1.1), and a certificate callback that presents the leaf
/// minted by `authority` for the client's SNI, or for the connection's fallback name
/// (the CONNECT host) when it sent none. Minted leaves are cached per name (bounded LRU).
///
/// One per CA, shared by all workers: an SSL_CTX is thread-safe and the cache is locked.
public final class TLSServerContext: @unchecked Sendable {
    let ctx: OpaquePointer
    public let authority: CertificateAuthority
    private let cache: Mutex<LeafCache>

    public static let defaultLeafCacheSize = 1000

    public init(authority: CertificateAuthority, leafCacheSize: Int = TLSServerContext.defaultLeafCacheSize) throws(IOError) {
        IORuntime.setUp()
        guard leafCacheSize > 0 else { throw IOError(.tls, "the leaf cache needs a positive size, got \(leafCacheSize)") }
        guard let c = SSL_CTX_new(TLS_server_method()) else { throw IOError(.tls, "SSL_CTX_new failed") }
        ctx = c
        self.authority = authority
        cache = Mutex(LeafCache(capacity: leafCacheSize))
        _ = airlock_SSL_CTX_set_min_proto_version(c, airlock_TLS1_2_VERSION())
        _ = airlock_SSL_CTX_set_mode(c, airlock_SSL_MODE_partial_moving())
        TLSSession.configureRecordBuffers(of: c)
        airlock_SSL_CTX_refuse_renegotiation(c)
        airlock_SSL_CTX_server_no_resumption(c)
        SSL_CTX_set_alpn_select_cb(c, alpnSelectCallback, nil)
        SSL_CTX_set_cert_cb(c, certificateCallback, nil)
    }

    deinit { SSL_CTX_free(ctx) }

    /// The leaf for `name` (a DNS name or IP literal), from the cache or minted now (under
    /// the cache's lock, so a name is minted once however many workers ask; a mint is one
    /// ECDSA signature).
    /// Throws `.leafName` for a name that is neither (nothing is minted), `.mint` on failure.
    public func leaf(for name: String) throws(IOError) -> LeafCertificate {
        let checked = try LeafName(validating: name)
        let now = Int64(time(nil))
        return try cache.withLock { (cache: inout LeafCache) throws(IOError) -> LeafCertificate in
            if let leaf = cache.get(checked, now: now) { return leaf }
            let leaf = try authority.mint(checked)
            cache.insert(leaf, for: checked)
            return leaf
        }
    }

    /// Leaves held by the cache now.
    public var cachedLeafCount: Int { cache.withLock { $0.count } }

    /// `http/1.1` if the client's ALPN list (`in`, length-prefixed names) holds it.
    static func selectsHTTP11(_ list: UnsafeRawBufferPointer) -> Int? {
        let want = Array("http/1.1".utf8)
        var i = 0
        while i < list.count {
            let n = Int(list[i])
            if i + 1 + n > list.count { return nil }
            if n == want.count && list[(i + 1)..<(i + 1 + n)].elementsEqual(want) { return i + 1 }
            i += 1 + n
        }
        return nil
    }
}

/// ALPN: point `out` at `http/1.1` inside the client's list, or answer without ALPN.
private let alpnSelectCallback: @convention(c) (
    OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
    UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
) -> Int32 = { _, out, outLength, list, listLength, _ in
    guard let out, let outLength, let list,
          let at = TLSServerContext.selectsHTTP11(UnsafeRawBufferPointer(start: list, count: Int(listLength))) else {
        return airlock_SSL_TLSEXT_ERR_NOACK()
    }
    out.pointee = list + at
    outLength.pointee = 8
    return airlock_SSL_TLSEXT_ERR_OK()
}

/// The certificate for this connection, chosen by its session (1: go on, 0: refuse).
private let certificateCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
    guard let ssl, let p = airlock_SSL_get_app_data(ssl) else { return 0 }
    return Unmanaged<TLSSession>.fromOpaque(p).takeUnretainedValue().selectCertificate() ? 1 : 0
}
