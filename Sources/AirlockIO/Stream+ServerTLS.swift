import CLibevent

/// The server role of TLS on an accepted stream (an intercepted CONNECT tunnel): the
/// handshake with a leaf minted for the client's SNI, then the same read and write paths
/// as client TLS (decrypted input, records through `wire` and the loop's batched writes,
/// close_notify on close).
extension Stream {
    /// Starts the TLS server handshake on this open, accepted stream. Output already queued
    /// (the `200` answering CONNECT) is sent first, in plain. Bytes already in the
    /// input (a ClientHello sent right behind the CONNECT head) are fed to the handshake
    /// first. The delegate hears `.connected` when the handshake completes, or
    /// `.tlsFailed(reason)` (garbage instead of a ClientHello, a refused server name, the
    /// read timeout, which bounds the handshake): from the loop, never from inside this call
    /// (only misuse — a second start, a stream not open — and an OpenSSL allocation failure
    /// are reported at once). Settings the owner changes during the handshake (reading,
    /// watermarks) apply once it is done. `fallbackName` is
    /// the name the leaf is minted for when the client sends no SNI (the CONNECT host).
    public func startServerTLS(_ context: TLSServerContext, fallbackName: String) {
        guard state == .open, fd >= 0, tlsSession == nil else {
            delegate?.stream(self, event: .tlsFailed("TLS can start only once, on an open stream"))
            return
        }
        // Plain output queued before TLS (the `200` answering CONNECT) goes now, unencrypted:
        // after this call everything is TLS. A few bytes on a fresh connection always fit.
        if outputLength > 0 {
            _ = plainWrite()
            guard outputLength == 0 else {
                fail(.tlsFailed("the plain output before TLS could not be sent"))
                return
            }
        }
        let prefix = takeInputForHandshake()
        guard let session = TLSSession(server: context, fd: fd, prefix: prefix, fallbackName: fallbackName) else {
            fail(.tlsFailed("SSL_new failed"))   // out of memory: reported at once
            return
        }
        tlsSession = Unmanaged.passRetained(session)
        handshakeStartedAt = EventLoop.nowNanos()
        state = .handshaking
        disarm()
        readArmed = true
        add(readEvent, timeouts.readTV)
        // The first step runs from the loop (the prefix may already hold the ClientHello).
        event_active(readEvent, Int32(airlock_ev_read()), 0)
    }

    /// The server name the client sent (SNI) once the server handshake accepted it; nil
    /// without SNI, before the handshake, and on client streams.
    public var tlsServerName: String? { tls?.serverName }

    /// The TLS bytes this stream's session moved over the socket, each way (ciphertext: the
    /// handshake and the records; plain bytes before TLS started are not counted); nil on a
    /// plain stream.
    public var tlsSocketBytes: (read: UInt64, written: UInt64)? { tls?.socketBytes }

    /// The ALPN protocol the handshake agreed, nil when none (either role).
    public var tlsALPN: String? { tls?.alpn }

    /// What the input holds (staged bytes of the current read callback, then the buffer),
    /// moved into a new evbuffer for the session; nil when empty.
    private func takeInputForHandshake() -> OpaquePointer? {
        guard inputLength > 0, let prefix = evbuffer_new() else { return nil }
        if staged.count > 0 {
            _ = evbuffer_add(prefix, staged.baseAddress, staged.count)
            staged = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        evbuffer_add_buffer(prefix, input)
        return prefix
    }
}
