import CLibevent
import COpenSSL

/// An OpenSSL write BIO that appends every record to an evbuffer (the BIO's data pointer)
/// instead of writing to the socket. A TLS stream switches its write side to one once the
/// handshake is done (`TLSSession.wire`): its ciphertext is then written like any plain
/// output, so it joins the loop's batched writes (`SendRing`), and a large body leaves in
/// a few `writev`s instead of one `send` per 16 KiB record. Appending cannot block, so
/// OpenSSL never sees a retry from it.
enum WireBIO {
    /// Made once; nil only if OpenSSL cannot allocate it (streams then fail their handshake).
    nonisolated(unsafe) static let method: OpaquePointer? = {
        guard let m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "airlock-wire") else { return nil }
        _ = BIO_meth_set_write(m, wireBIOWrite)
        _ = BIO_meth_set_ctrl(m, wireBIOCtrl)
        _ = BIO_meth_set_create(m, wireBIOCreate)
        return m
    }()
}

private let wireBIOWrite: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = { bio, data, len in
    guard len > 0 else { return 0 }
    guard let bio, let data, let buffer = BIO_get_data(bio) else { return -1 }
    return evbuffer_add(OpaquePointer(buffer), data, Int(len)) == 0 ? len : -1
}

/// Flush succeeds (there is nothing to flush); every other control is unsupported.
private let wireBIOCtrl: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = { _, cmd, _, _ in
    cmd == BIO_CTRL_FLUSH ? 1 : 0
}

private let wireBIOCreate: @convention(c) (OpaquePointer?) -> Int32 = { bio in
    BIO_set_init(bio, 1)
    return 1
}
