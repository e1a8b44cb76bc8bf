import AirlockIO
import AirlockSession
import AirlockWire

/// CONNECT: the route's policy (`GatewayPhases.connectPeer`), then a raw tunnel (`Tunnel`) or
/// interception (`beginInterception`). Either way the connection never carries another
/// request: bytes behind a CONNECT head belong to the tunnel.
extension ClientConnection {
    /// A CONNECT that passed the request filter: refused (403 no-route / connect-denied /
    /// connect-port-denied, then closed), tunnelled, or handed to interception.
    func dispatchConnect(_ req: RequestHead, id: RequestID) {
        let peer: ConnectPeer
        switch worker.phases.connectPeer(req) {
        case .success(let p): peer = p
        case .failure(let e):
            respondError(e, exchange: nil, requestID: id, request: req)
            return
        }
        switch peer.policy {
        case .deny:
            break   // connectPeer refuses these
        case .intercept:
            beginInterception(req, id: id, peer: peer)
        case .tunnel:
            lifecycle.tunnelStarted()
            let t = Tunnel(client: self, id: id, request: req, peer: peer)
            tunnel = t
            t.start()
        }
    }

    /// `connect: intercept`: THE SEAM for TLS interception with the local CA (issue #14).
    ///
    /// Called once per accepted CONNECT whose route says `intercept` and whose port is in its
    /// `connect_ports`, right after the head was parsed. At this point:
    /// - `stream` is the client's plain TCP stream; its input may already hold bytes the client
    ///   sent behind the CONNECT head (a TLS ClientHello): they must not be dropped;
    /// - `peer.route` is the matched `Route` (its `config.security` is the trust for the real
    ///   upstream, `config.request` / `config.response` the phases to apply inside);
    ///   `peer.host` / `peer.port` are where requests inside go (the CONNECT authority on an
    ///   `origin` route, the fixed upstream's host and port otherwise); `peer.target` is the
    ///   `host:port` the client asked for (the name to mint a certificate for);
    /// - `req` is the CONNECT head, `id` its request id; `lifecycle.phase` is `.awaitingHead`.
    ///
    /// An implementation writes `Tunnel.established`, starts a TLS server session on `stream`
    /// (AirlockIO) with a certificate for `peer.target`, and then serves the decrypted
    /// requests through the usual phases (`readHead` → `dispatch`), with `peer.route` as the
    /// route. Until then: 501 connect-intercept-unavailable, and the connection closes.
    func beginInterception(_ req: RequestHead, id: RequestID, peer: ConnectPeer) {
        var e = GatewayError(.connectInterceptUnavailable, status: 501,
                             message: "route \(peer.route.config.name) says connect: intercept, which needs the local CA; "
                                 + "not available in this build", source: .internal, mustClose: true)
        e.extra = [("host", .string(peer.target)), ("route", .string(peer.route.config.name))]
        respondError(e, exchange: nil, requestID: id, request: req)
    }

    /// The tunnel ended (and was logged): the connection closes, after what is queued for the
    /// client on a clean end or an error answer, at once otherwise.
    func tunnelEnded(flush: Bool) {
        tunnel = nil
        if flush { closeAfterFlush() } else { close() }
    }
}
