/// What a route does with a `CONNECT host:port` request (`routes[i].connect`).
public enum ConnectPolicy: String, Sendable, Equatable, CaseIterable {
    /// 403 connect-denied (the default: a route opens no tunnel unless it says so).
    case deny
    /// A raw TCP tunnel to the CONNECT authority (`upstream: origin`) or to a fixed https
    /// upstream's host and port: `200 Connection established`, then bytes both ways unparsed.
    case tunnel
    /// TLS interception with the local CA: the gateway answers the TLS handshake itself and
    /// proxies the requests inside like any other (`ClientConnection.beginInterception`).
    case intercept
}

extension RouteConfig {
    /// `connect_ports` when the config names none.
    public static let defaultConnectPorts: [UInt16] = [443]
}
