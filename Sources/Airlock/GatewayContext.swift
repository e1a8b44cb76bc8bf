import AirlockConfig
import AirlockIO
import Logging

/// What every worker shares, read-only: the configuration and the gateway's identity.
struct GatewayContext: Sendable {
    let config: AirlockConfig
    /// `ca:` opened: the local CA intercepted tunnels present leaves from; nil without one.
    let ca: OpenedCA?
    let logger: Logger
    /// The `Via` pseudonym of this process; seeing it on an incoming request means a loop.
    let viaToken: String
    /// The `Via` element this gateway adds to HTTP/1.1 requests ("1.1 <token>"), built once.
    let via11: String
    /// The bound listen address (its real port when the configuration said 0).
    let listenAddress: SocketAddress
    /// A random prefix that makes request ids unique across restarts.
    let idPrefix: String
    /// OpenSSL client contexts, one per distinct trust identity, made on first use: a
    /// context loads the system trust store (megabytes), which a plain-HTTP gateway never needs.
    let tls: TLSContexts
    /// The last reject records, appended by workers, read by the admin listener.
    let rejects: RejectLog
    /// Metric handles (`GET /metrics`), updated by workers, read by the admin listener.
    let metrics: GatewayMetrics
    /// Each configured upstream's reachability, fed by probes and by workers' connections.
    let reachability: Reachabilities
    /// The proxy and admin listeners' bound addresses: never a target (508).
    let ownListeners: OwnListeners

    init(config: AirlockConfig, ca: OpenedCA? = nil, logger: Logger, viaToken: String, listenAddress: SocketAddress,
         adminAddress: SocketAddress? = nil, idPrefix: String,
         rejects: RejectLog, metrics: GatewayMetrics, reachability: Reachabilities) {
        self.ownListeners = OwnListeners([listenAddress] + (adminAddress.map { [$0] } ?? []),
                                         interfaces: SocketAddress.interfaceAddresses())
        self.rejects = rejects
        self.metrics = metrics
        self.reachability = reachability
        self.tls = TLSContexts()
        self.config = config
        self.ca = ca
        self.logger = logger
        self.viaToken = viaToken
        self.via11 = "1.1 \(viaToken)"
        self.listenAddress = listenAddress
        self.idPrefix = idPrefix
    }

    /// True when `address` is one of this gateway's own listeners (proxy or admin).
    func isSelf(_ address: SocketAddress) -> Bool { ownListeners.contains(address) }
}
