import CLibevent

/// A stream's TLS handshake (a connecting stream's client handshake here, an accepted
/// stream's server handshake starts in `Stream+ServerTLS`), and what the owner may ask of
/// the session after it. The `TLSSession` does the OpenSSL part; the stream arms its events and reports.
extension Stream {
    /// The chain the server presented (leaf first), or nil for plain TCP.
    public var tlsPeerChain: [PeerCertificate]? { tls?.peerChain }

    public var tlsSessionReused: Bool { tls?.isResumed ?? false }

    /// True when the client handshake failed before the server sent any handshake message
    /// (no ServerHello, so no certificate either): the server does not speak TLS, or closed.
    public var tlsFailedBeforeServerHello: Bool { tls?.failedBeforeServerHello ?? false }

    /// Runs one X509 validation of the presented chain (see TLSClientContext.verify).
    public func tlsVerify(anchors: TLSClientContext.Anchors, hostname: String?)
        -> Result<[PeerCertificate], TLSClientContext.VerifyError> {
        guard let tls else { return .failure(.init(code: -1, text: "no TLS peer chain")) }
        return tls.verify(anchors: anchors, hostname: hostname)
    }

    func startHandshake() {
        guard let setup = tlsSetup, let session = TLSSession(setup: setup, fd: fd) else {
            fail(.tlsFailed("SSL_new failed"))
            return
        }
        tlsSetup = nil
        tlsSession = Unmanaged.passRetained(session)
        handshakeStartedAt = EventLoop.nowNanos()
        state = .handshaking
        continueHandshake()
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .done:
            if let w = tls.wire { wire = w }
            state = .open
            disarm()
            updateReadEvent()
            // Records the handshake already read past its end fire no socket event.
            if tls.hasPending { event_active(readEvent, Int32(airlock_ev_read()), 0) }
            delegate?.stream(self, event: .connected)
        case .wantRead:
            armWrite(false)
            // A client handshake is bounded by the connect timeout, a server one by the read timeout.
            if !readArmed { readArmed = true; add(readEvent, tls.isServer ? timeouts.readTV : timeouts.writeTV) }
        case .wantWrite:
            armWrite(true)
        case .failed(let why):
            tls.handshakeFailed = true
            disarm()
            state = .eof
            delegate?.stream(self, event: .tlsFailed(why))
        }
    }

    /// A read or write event during the handshake: continue it, or fail it on timeout.
    func handshakeEvent(_ what: Int16) {
        guard what & airlock_ev_timeout() == 0 else {
            tls?.handshakeFailed = true
            disarm()
            state = .eof
            delegate?.stream(self, event: .tlsFailed("handshake timed out"))
            return
        }
        continueHandshake()
    }
}
