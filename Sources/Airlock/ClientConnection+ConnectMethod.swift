import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// CONNECT: the route's policy (`GatewayPhases.connectPeer`), then a raw tunnel (`Tunnel`) or
/// interception (`beginInterception`, in `ClientConnection+Intercept`). Either way the connection never carries another
/// request: bytes behind a CONNECT head belong to the tunnel.
extension ClientConnection {
    /// A CONNECT that passed the request filter: refused (403 no-route / connect-denied /
    /// connect-port-denied, then closed), tunnelled, or handed to interception.
    func dispatchConnect(_ ex: Exchange) {
        let (req, id) = (ex.request, ex.id)
        let peer: ConnectPeer
        switch worker.phases.connectPeer(req) {
        case .success(let p): peer = p
        case .failure(let e):
            ex.respond(e)
            return
        }
        switch peer.policy {
        case .deny:
            break   // connectPeer refuses these
        case .intercept:
            beginInterception(ex, peer: peer)
        case .tunnel:
            lifecycle.tunnelStarted()
            let t = Tunnel(client: self, id: id, request: req, peer: peer)
            tunnel = t
            t.start()
        }
    }

    /// The tunnel ended (and was logged): the connection closes, after what is queued for the
    /// client on a clean end or an error answer, at once otherwise.
    func tunnelEnded(flush: Bool) {
        tunnel = nil
        if flush { closeAfterFlush() } else { close() }
    }
}
