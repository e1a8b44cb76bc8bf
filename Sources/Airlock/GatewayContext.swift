import AirlockConfig
import AirlockIO
import Logging

/// What every worker shares, read-only: the configuration and the gateway's identity. A reload
/// hands each worker a new value (`Gateway.reload`): the configuration, the CA, the TLS
/// contexts and the reachabilities change; the identity, the listeners and the logs do not.
struct GatewayContext: Sendable {
    private(set) var config: AirlockConfig
    /// `ca:` opened: the local CA intercepted tunnels present leaves from; nil without one.
    private(set) var ca: OpenedCA?
    /// 0 at start, one more each successful reload.
    private(set) var generation = 0
    /// The trust identities in use with a digest of their CA and certificate files as they were
    /// read for this configuration (`Gateway.staleTrust` compares a reload's against it).
    private(set) var trustMaterial: [String: [UInt8]] = [:]
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
    private(set) var tls: TLSContexts
    /// The last reject records, appended by workers, read by the admin listener.
    let rejects: RejectLog
    /// Metric handles (`GET /metrics`), updated by workers, read by the admin listener.
    let metrics: GatewayMetrics
    /// Each configured upstream's reachability, fed by probes and by workers' connections.
    private(set) var reachability: Reachabilities
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
        self.trustMaterial = Self.trustMaterial(of: config)
        self.logger = logger
        self.viaToken = viaToken
        self.via11 = "1.1 \(viaToken)"
        self.listenAddress = listenAddress
        self.idPrefix = idPrefix
    }

    /// This context with a reloaded configuration: new TLS client contexts (files are read
    /// again on first use), the new CA and reachabilities; everything else kept.
    func reloaded(_ opened: OpenedConfig, reachability: Reachabilities) -> GatewayContext {
        var next = self
        next.config = opened.config
        next.ca = opened.ca
        next.tls = TLSContexts()
        next.reachability = reachability
        next.generation = generation + 1
        next.trustMaterial = Self.trustMaterial(of: opened.config)
        return next
    }

    /// True when `address` is one of this gateway's own listeners (proxy or admin).
    func isSelf(_ address: SocketAddress) -> Bool { ownListeners.contains(address) }
}
