import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// What a client connection carries once a CONNECT was intercepted (`connect: intercept`):
/// the requests inside its TLS session all go to one place, under one route, and must name
/// the host the CONNECT named. Set when the TLS handshake completes; nil on plain connections.
struct Interception {
    /// The CONNECT's route, policy, and where requests inside go (`ConnectPeer.host`/`port`:
    /// the CONNECT authority on an `origin` route, the fixed upstream's otherwise).
    let peer: ConnectPeer
    /// The CONNECT authority as the client wrote it (host lower-cased, IPv6 in brackets).
    let host: String
    let port: UInt16
    /// The name the client asked for in its ClientHello (SNI), if it sent one.
    let serverName: String?
    /// The upstream every request inside goes to: the route's fixed upstream, or
    /// `https://<CONNECT authority>` under the route's trust.
    let key: UpstreamKey
    /// The CONNECT and when its `200` went out: the session's access record, written when
    /// the connection ends, reports from it.
    let handshake: InterceptHandshake

    init(_ handshake: InterceptHandshake, serverName: String?) {
        let peer = handshake.peer
        self.handshake = handshake
        self.peer = peer
        host = handshake.host
        port = handshake.port
        self.serverName = serverName
        key = peer.route.fixedKey
            ?? UpstreamKey(scheme: "https", host: peer.host, port: peer.port,
                           trust: peer.route.config.security.trustIdentity)
    }

    /// Whether a request inside names the intercepted authority: its `Host` (or absolute-form
    /// target) must be the CONNECT's host, and its port the CONNECT's (443 when it gives none).
    /// Anything else would use a tunnel opened for one host to reach another.
    func admits(host requestHost: String, port requestPort: UInt16?) -> Bool {
        requestHost == host && (requestPort ?? 443) == port   // both lower-cased by the parser
    }
}

/// An intercepted CONNECT between its `200` and the end of the TLS handshake that follows it.
struct InterceptHandshake {
    let id: RequestID
    /// The CONNECT head.
    let request: RequestHead
    let peer: ConnectPeer
    let host: String
    let port: UInt16
    let started = EventLoop.nowNanos()
}
