import COpenSSL

/// An OpenSSL read BIO for a server session whose client spoke first: it returns the bytes
/// the stream had already read (the session's `prefix`) before reading the socket. Its data
/// pointer is the `TLSSession` (unretained: the session owns the SSL that owns the BIO).
/// Only reads; the session's write side is a socket BIO, then a `WireBIO`.
enum PrefixBIO {
    /// Made once; nil only if OpenSSL cannot allocate it (the handshake then fails to start).
    nonisolated(unsafe) static let method: OpaquePointer? = {
        guard let m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "airlock-prefix") else { return nil }
        _ = BIO_meth_set_read(m, prefixBIORead)
        _ = BIO_meth_set_ctrl(m, prefixBIOCtrl)
        _ = BIO_meth_set_create(m, prefixBIOCreate)
        return m
    }()
}

private let prefixBIORead: @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int32) -> Int32 = { bio, out, len in
    guard let bio, let out, len > 0, let data = BIO_get_data(bio) else { return 0 }
    airlock_BIO_clear_retry_flags(bio)
    var retry = false
    let n = Unmanaged<TLSSession>.fromOpaque(data).takeUnretainedValue()
        .readPrefixThenSocket(into: out, count: Int(len), retry: &retry)
    if retry { airlock_BIO_set_retry_read(bio) }
    return n
}

/// Flush succeeds (there is nothing to flush); every other control is unsupported.
private let prefixBIOCtrl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = { _, cmd, _, _ in
    cmd == BIO_CTRL_FLUSH ? 1 : 0
}

private let prefixBIOCreate: @convention(c) (OpaquePointer?) -> Int32 = { bio in
    BIO_set_init(bio, 1)
    return 1
}
