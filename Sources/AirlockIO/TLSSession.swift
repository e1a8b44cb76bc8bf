import CLibevent
import COpenSSL

/// One TLS connection over a stream's socket, either role: OpenSSL's `SSL` object from the
/// handshake to close_notify. A client session (an upstream) sends SNI and offers a session
/// for resumption; a server session (an intercepted client, `Stream.startServerTLS`) answers
/// with a leaf certificate minted for the client's server name (`TLSServerContext`).
/// `Stream` drives it and does every socket write itself; this type only turns bytes into
/// records and back, and never calls back into the stream.
///
/// After the handshake, OpenSSL's write side is a `WireBIO` over `wire`: records are
/// appended there, and the stream writes them like plain output (so TLS streams join the
/// loop's batched writes). Reads come straight from the socket (a server session whose
/// client spoke first reads those bytes before the socket's: `TLSSession+Server`).
final class TLSSession {
    /// What `read` returns besides a byte count.
    static let closed = 0        // close_notify: a clean end
    static let wantRead = -1     // nothing to read now
    static let failed = -2       // a failure, or a TCP close without close_notify (`readFailure`)
    static let wantWrite = -3    // OpenSSL must write before it can read

    enum HandshakeStep {
        case done
        case wantRead
        case wantWrite
        case failed(String)
    }

    /// Which end of the connection this session is, with what that end needs.
    enum Role {
        /// We connected: verification uses the context, new sessions go to the setup's owner.
        case client(TLSClientContext, onNewSession: (TLSSessionTicket) -> Void)
        /// We accepted: the context mints the certificate for the client's server name.
        case server(TLSServerContext)
    }

    let ssl: OpaquePointer
    let role: Role
    /// Ciphertext OpenSSL wrote and the socket has not taken yet; nil before the handshake.
    private(set) var wire: OpaquePointer?
    /// Why the last `read` returned `failed`.
    private(set) var readFailure = ""
    /// An encryption failure met while queueing a batched write, reported by the next flush.
    var encryptFailure: String?

    // Server role only (see TLSSession+Server).
    /// The socket, for the prefix BIO's reads after the prefix.
    let fd: Int32
    /// Bytes the stream had read before the handshake started (the start of the ClientHello),
    /// fed to OpenSSL before the socket's; nil when there were none.
    var prefix: OpaquePointer?
    /// The name to mint for when the client sends no SNI (the CONNECT host).
    var fallbackName = ""
    /// The SNI the client sent, once the certificate callback accepted it.
    var serverName: String?
    /// The handshake failed (or timed out): the session carries nothing more. The stream then
    /// ends as a plain TCP one (no close_notify; lingering reads discard raw bytes).
    var handshakeFailed = false
    /// Why the certificate callback refused, for the handshake's failure reason.
    var certificateFailure: String?
    /// A client handshake that failed before the server's first handshake message (its
    /// ServerHello) was read, and not on an alert from it: the peer answered with no TLS at
    /// all (a plaintext server: "wrong version number") or closed. Set with the failure.
    private(set) var failedBeforeServerHello = false
    /// What the handshake wrote straight to the socket, counted by its BIO before `wire` replaced it.
    private var handshakeBytesWritten: UInt64 = 0

    /// An SSL object for `fd` in `role`, its app data pointing at the session; nil when
    /// OpenSSL cannot allocate one. The role's initializers finish the setup.
    init?(ctx: OpaquePointer, role: Role, fd: Int32) {
        guard let s = SSL_new(ctx) else { return nil }
        ssl = s
        self.role = role
        self.fd = fd
        _ = airlock_SSL_set_app_data(s, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A client session for `fd`, not yet started; nil when OpenSSL cannot allocate one.
    convenience init?(setup: TLSSetup, fd: Int32) {
        self.init(ctx: setup.context.ctx, role: .client(setup.context, onNewSession: setup.onNewSession), fd: fd)
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        let name = setup.serverName
        if SocketAddress(ipLiteral: name.hasPrefix("[") ? String(name.dropFirst().dropLast()) : name, port: 0) == nil {
            _ = airlock_SSL_set_tlsext_host_name(ssl, name)
        }
        if let session = setup.session { SSL_set_session(ssl, session.session) }   // takes its own reference
    }

    var isServer: Bool {
        if case .server = role { return true }
        return false
    }

    deinit {
        SSL_free(ssl)
        if let w = wire { evbuffer_free(w) }
        if let p = prefix { evbuffer_free(p) }
    }

    /// OpenSSL's read buffer for every session: four full records (OpenSSL's default holds one
    /// and a little more).
    static let readBufferBytes = 64 * 1024

    /// How every context's sessions read and hold records (client and server contexts):
    /// - read-ahead: one `recv` takes what the socket holds, up to OpenSSL's read buffer,
    ///   instead of one `recv` for each record's 5-byte header and another for its body: half
    ///   the reads of a bulk body (bench/README.md, "TLS bulk": -21 % CPU per 1 MiB response).
    /// - a read buffer of `readBufferBytes`: a bulk body's socket usually holds several records
    ///   when the loop reads it, and one `recv` takes up to four of them (75 -> ~35 reads per
    ///   1 MiB response in the TLS bench row, -8 % CPU per response; bench/README.md, "fourth
    ///   session"). Allocated only while records are read (release buffers, below).
    /// - release buffers: OpenSSL frees a connection's record buffers whenever they are empty,
    ///   so an idle or pooled connection holds none (peak RSS after 500 concurrent TLS
    ///   exchanges: 57 -> 40.5 MiB).
    /// Records read ahead, like decrypted bytes, fire no socket event: `hasPending`
    /// (`SSL_has_pending` counts both) tells the stream to come back for them.
    static func configureRecordBuffers(of ctx: OpaquePointer) {
        airlock_SSL_CTX_set_read_ahead(ctx, 1)
        SSL_CTX_set_default_read_buffer_len(ctx, readBufferBytes)
        _ = airlock_SSL_CTX_set_mode(ctx, Int(SSL_MODE_RELEASE_BUFFERS))
    }

    // MARK: handshake

    /// One step of the handshake. On `.done` the write side has moved to `wire`.
    func handshake() -> HandshakeStep {
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            return attachWireBIO() ? .done : .failed("out of memory for the TLS write buffer")
        }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            // Reasons from SSL_AD_REASON_OFFSET up are alerts the peer sent: it speaks TLS.
            failedBeforeServerHello = !isServer && SSL_get_state(ssl) == TLS_ST_CW_CLNT_HELLO
                && ERR_GET_REASON(ERR_peek_error()) < SSL_AD_REASON_OFFSET
            let why = Self.opensslError(fallback: "handshake failed")
            if let c = certificateFailure { return .failed("\(c) (\(why))") }
            return .failed(why)
        }
    }

    /// From now on OpenSSL writes records into `wire` instead of the socket (reads still
    /// come straight from the socket). False when memory runs out.
    private func attachWireBIO() -> Bool {
        guard let method = WireBIO.method, let w = evbuffer_new() else { return false }
        guard let bio = BIO_new(method) else {
            evbuffer_free(w)
            return false
        }
        BIO_set_data(bio, UnsafeMutableRawPointer(w))
        handshakeBytesWritten = SSL_get_wbio(ssl).map { BIO_number_written($0) } ?? 0
        SSL_set0_wbio(ssl, bio)   // the socket BIO stays as the read BIO
        wire = w
        return true
    }

    /// Ciphertext this session moved over its socket so far: read (the prefix included) and
    /// written (the handshake's, then what left `wire`; records still queued there are not counted).
    var socketBytes: (read: UInt64, written: UInt64) {
        let read = SSL_get_rbio(ssl).map { BIO_number_read($0) } ?? 0
        guard let w = wire else {
            return (read, SSL_get_wbio(ssl).map { BIO_number_written($0) } ?? 0)
        }
        let queued = UInt64(evbuffer_get_length(w))
        let encrypted = SSL_get_wbio(ssl).map { BIO_number_written($0) } ?? 0
        return (read, handshakeBytesWritten + encrypted - min(queued, encrypted))
    }

    /// A new session from the server, through `TLSClientContext`'s callback: the ticket
    /// takes OpenSSL's reference (so the callback returns 1) and goes to the setup's owner.
    func offer(_ session: OpaquePointer) {
        guard case .client(_, let onNewSession) = role else { return }
        onNewSession(TLSSessionTicket(taking: session))
    }

    // MARK: after the handshake

    /// The chain the server presented (leaf first), nil when there is none.
    var peerChain: [PeerCertificate]? {
        guard let chain = SSL_get_peer_cert_chain(ssl) else { return nil }
        var out: [PeerCertificate] = []
        for i in 0..<airlock_sk_X509_num(chain) {
            if let x = airlock_sk_X509_value(chain, i) { out.append(PeerCertificate(x)) }
        }
        return out
    }

    var isResumed: Bool { SSL_session_reused(ssl) == 1 }

    /// The protocol ALPN agreed, nil when none.
    var alpn: String? {
        var p: UnsafePointer<UInt8>?
        var n: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &p, &n)
        guard let p, n > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(n)), as: UTF8.self)
    }

    /// Runs one X509 validation of the presented chain (see TLSClientContext.verify).
    func verify(anchors: TLSClientContext.Anchors, hostname: String?)
        -> Result<[PeerCertificate], TLSClientContext.VerifyError> {
        guard case .client(let context, _) = role, let chain = SSL_get_peer_cert_chain(ssl) else {
            return .failure(.init(code: -1, text: "no TLS peer chain"))
        }
        return context.verify(peerChain: chain, anchors: anchors, hostname: hostname)
    }

    /// Decrypts into `buffer`: a byte count, or `closed`, `wantRead`, `wantWrite`, `failed`.
    @inline(__always)
    func read(into buffer: UnsafeMutableRawPointer?, count: Int) -> Int {
        let r = SSL_read(ssl, buffer, Int32(count))
        if r > 0 { return Int(r) }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ: return Self.wantRead
        case SSL_ERROR_WANT_WRITE: return Self.wantWrite
        case SSL_ERROR_ZERO_RETURN: return Self.closed
        default:
            // Includes a TCP close without close_notify: a truncation, never a clean end.
            readFailure = Self.opensslError(fallback: "TLS connection closed without close_notify")
            return Self.failed
        }
    }

    /// Bytes OpenSSL already holds, decrypted or read ahead (they fire no socket event).
    @inline(__always)
    var hasPending: Bool { SSL_has_pending(ssl) == 1 }

    /// Records waiting in `wire` (a read can make OpenSSL write: a KeyUpdate answer, an alert).
    @inline(__always)
    var hasWireOutput: Bool {
        if let w = wire { return evbuffer_get_length(w) > 0 }
        return false
    }

    /// Encrypts all of `plaintext` into `wire`, as TLS records of up to 16 KiB: nil, or
    /// OpenSSL's reason. Calls nothing of ours but WireBIO.
    func encrypt(_ plaintext: OpaquePointer) -> String? {
        while true {
            let len = evbuffer_get_length(plaintext)
            if len == 0 { return nil }
            let chunk = Swift.min(len, 16384)
            guard let p = evbuffer_pullup(plaintext, chunk) else { return nil }
            let r = SSL_write(ssl, p, Int32(chunk))
            if r <= 0 { return Self.opensslError(fallback: "TLS write failed") }
            evbuffer_drain(plaintext, Int(r))
        }
    }

    /// Queues close_notify into `wire` when the handshake had finished; true when there are
    /// records to send.
    func shutdown() -> Bool {
        defer { ERR_clear_error() }
        guard SSL_is_init_finished(ssl) == 1 else { return false }
        _ = SSL_shutdown(ssl)
        return hasWireOutput
    }

    /// OpenSSL's first queued error as text (the queue is cleared), or `fallback`.
    static func opensslError(fallback: String) -> String {
        let e = ERR_get_error()
        ERR_clear_error()
        guard e != 0 else { return fallback }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(e, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
