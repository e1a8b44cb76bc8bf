import CLibevent
import COpenSSL
import Glibc

/// The server role: a session on an accepted socket whose client may already have sent the
/// start of its ClientHello (right behind a CONNECT head, before our `200`). Those bytes
/// were read into the stream's input; they become the session's `prefix`, and a
/// `PrefixBIO` gives OpenSSL the prefix first and then the socket, so none are lost.
extension TLSSession {
    /// A server session for `fd`, not yet started; `prefix` (taken, may be nil) holds bytes
    /// already read from the socket. Nil when OpenSSL cannot allocate it.
    convenience init?(server context: TLSServerContext, fd: Int32, prefix: OpaquePointer?, fallbackName: String) {
        self.init(ctx: context.ctx, role: .server(context), fd: fd)
        self.fallbackName = fallbackName
        SSL_set_accept_state(ssl)
        guard let prefix, evbuffer_get_length(prefix) > 0 else {
            if let prefix { evbuffer_free(prefix) }
            SSL_set_fd(ssl, fd)
            return
        }
        self.prefix = prefix
        guard let method = PrefixBIO.method, let rbio = BIO_new(method) else { return nil }
        guard let wbio = BIO_new_socket(fd, BIO_NOCLOSE) else {
            BIO_free(rbio)
            return nil
        }
        BIO_set_data(rbio, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_bio(ssl, rbio, wbio)
    }

    /// The prefix BIO's read: the prefix first, then the socket. A byte count, 0 at the
    /// socket's end, -1 with `retry` set when the socket has nothing now.
    func readPrefixThenSocket(into out: UnsafeMutableRawPointer, count: Int, retry: inout Bool) -> Int32 {
        if let p = prefix, evbuffer_get_length(p) > 0 {
            return evbuffer_remove(p, out, count)
        }
        let n = recv(fd, out, count, 0)
        if n >= 0 { return Int32(n) }
        retry = errno == EAGAIN || errno == EINTR
        return -1
    }

    /// OpenSSL's certificate callback for this connection: the leaf for the client's SNI, or
    /// for the fallback name when it sent none. False refuses the handshake (a name we will
    /// not mint for; `certificateFailure` says why).
    func selectCertificate() -> Bool {
        guard case .server(let context) = role else { return false }
        let sni = SSL_get_servername(ssl, airlock_TLSEXT_NAMETYPE_host_name()).map { String(cString: $0) }
        let name = sni ?? fallbackName
        do {
            let leaf = try context.leaf(for: name)
            guard SSL_use_certificate(ssl, leaf.x509) == 1,
                  SSL_use_PrivateKey(ssl, context.authority.leafKey) == 1 else {
                certificateFailure = "cannot use the certificate minted for \(leaf.name)"
                return false
            }
            if sni != nil { serverName = leaf.name }
            return true
        } catch {
            certificateFailure = sni != nil ? "client server name refused: \(error.detail)"
                                            : "fallback name refused: \(error.detail)"
            return false
        }
    }
}
