import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// `connect: intercept`: the CONNECT is answered `200`, Airlock performs the TLS server
/// handshake with a leaf for the client's SNI (else the CONNECT host) signed by the local CA,
/// and the requests inside the TLS session then take the same path as any other request
/// (`readHead` → `dispatch`: the route's request serializer, the session, TLS origination
/// under the route's security policy, the response validators), to the CONNECT's upstream
/// (`Interception`). Only the handshake is new here; the stream does the TLS itself.
extension ClientConnection {
    /// Called by `dispatchConnect` for an accepted CONNECT on an `intercept` route.
    func beginInterception(_ ex: Exchange, peer: ConnectPeer) {
        let (req, id) = (ex.request, ex.id)
        guard let context = worker.context.ca?.serverContext, case .authority(let host, let port) = req.target else {
            // The configuration refuses intercept routes without a CA; kept fail-closed anyway.
            var e = GatewayError(.connectInterceptUnavailable, status: 501,
                                 message: "route \(peer.route.config.name) says connect: intercept, but no ca: is loaded",
                                 source: .internal, mustClose: true)
            e.extra = [("host", .string(peer.target)), ("route", .string(peer.route.config.name))]
            ex.respond(e)
            return
        }
        lifecycle.interceptStarted()
        handshake = InterceptHandshake(id: id, request: req, peer: peer, host: host, port: port)
        // The 200 goes out in the clear, then the handshake (bytes the client already sent
        // behind the CONNECT head are its first input). header_timeout bounds the handshake.
        stream.write(Tunnel.established)
        timerMode = .header
        timer.schedule(after: limits.headerTimeout)
        stream.startServerTLS(context, fallbackName: host)
    }

    /// The stream's report while the handshake runs: done (requests follow, inside TLS) or
    /// failed (garbage instead of a ClientHello, a client that does not trust the CA, a
    /// timeout, a close). Either way the handshake is logged once.
    func interceptHandshakeEnded(_ event: StreamEvent) {
        guard let h = handshake else { close(); return }
        handshake = nil
        timer.cancel()
        timerMode = .idle
        if event == .connected {
            let i = Interception(h, serverName: stream.tlsServerName)
            interception = i
            worker.phases.logging(interception: h, serverName: i.serverName, failure: nil, client: peer)
            lifecycle.handshakeCompleted()
            idleSince = EventLoop.nowNanos()
            readHead()
            return
        }
        let reason: String
        switch event {
        case .eof: reason = "the client closed the connection during the TLS handshake"
        case .readTimeout, .writeTimeout: reason = "the TLS handshake timed out (idle_timeout)"
        case .error, .tlsFailed, .connected: reason = event.reason
        }
        worker.phases.logging(interception: h, serverName: stream.tlsServerName, failure: reason, client: peer)
        // What OpenSSL queued (its alert) goes out, then FIN, and the rest of what the client
        // sent is read and dropped (a close with unread input would be a reset).
        closeAfterFlush()
    }

    /// The intercepted session's access record, for `close`/`closeAfterFlush` to run once the
    /// connection's last bytes are gone: the TLS bytes both ways over the client connection and
    /// the time since the `200`. Nil on a connection that was not intercepted.
    func interceptedSessionRecord() -> (() -> Void)? {
        guard let i = interception else { return nil }
        let (phases, stream, client) = (worker.phases, stream, peer)
        return {
            let bytes = stream.tlsSocketBytes ?? (0, 0)
            phases.logging(interceptedSession: i, bytesIn: bytes.read, bytesOut: bytes.written, client: client)
        }
    }
}
