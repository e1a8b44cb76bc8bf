import COpenSSL

/// A TLS session a server issued (OpenSSL's `SSL_SESSION`), kept to resume a later
/// connection. The object owns one reference to the session and frees it when the last
/// Swift reference goes, so a session is shared (the cache, a connecting stream, a
/// connection that has not passed its trust evaluation yet) by plain ARC, and nothing
/// outside AirlockIO handles the C pointer.
public final class TLSSessionTicket {
    let session: OpaquePointer

    /// Takes over a reference the caller owns (e.g. the one OpenSSL's new-session callback
    /// hands over when it returns 1).
    init(taking session: OpaquePointer) {
        self.session = session
    }

    deinit { SSL_SESSION_free(session) }
}
