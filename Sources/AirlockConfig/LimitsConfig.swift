/// Per-connection and per-process limits. Every field has a default, so a
/// config names only what it changes.
public struct LimitsConfig: Sendable, Equatable {
    /// Longer request line -> 414.
    public var requestLineBytes: Int = 8192
    /// Whole header block; larger -> 431.
    public var headerBytes: Int = 65536
    /// More header fields -> 431.
    public var headerCount: Int = 100
    /// Declared body larger -> 413.
    public var bodyBytes: Int64 = 104_857_600
    /// The client must finish its request head in this time -> 408 + close.
    public var headerTimeout: Duration = .seconds(10)
    /// Keep-alive idle, client and upstream side.
    public var idleTimeout: Duration = .seconds(75)
    public var connectTimeout: Duration = .seconds(5)
    /// No byte from upstream for this long -> 504.
    public var upstreamTimeout: Duration = .seconds(60)
    /// On SIGTERM, in-flight exchanges get this long.
    public var drainTimeout: Duration = .seconds(10)
    /// Idle pooled connections kept per worker per upstream; 0 disables pooling.
    public var maxIdlePerUpstream: Int = 64
    /// Client connections per process; a connection accepted above it is closed at once.
    /// At start it is lowered to what the descriptor limit supports (see `Gateway`).
    public var maxConnections: Int = 10000
    /// Connections per upstream (open, connecting or idle), 0 = unlimited (the default). Requests
    /// beyond it wait (`upstreamQueue`, `upstreamQueueTimeout`), then 503 upstream-busy. Each
    /// worker enforces its share (the cap divided among workers, so it must be at least `workers`).
    public var maxConnectionsPerUpstream: Int = 0
    /// Requests waiting for a connection to one upstream, per process (divided among workers).
    public var upstreamQueue: Int = 256
    public var upstreamQueueTimeout: Duration = .seconds(5)
    public static let maxUpstreamQueue = 100_000
    /// A CONNECT tunnel with no byte read from either side for this long is closed.
    public var tunnelIdleTimeout: Duration = .seconds(300)
    /// Bodies nothing needs to read (and CONNECT tunnels) move socket to socket with
    /// `splice(2)` between plain TCP connections, instead of through memory.
    public var splice: Bool = true
    /// Whether the config named `max_connections` (a default that does not fit the
    /// descriptor limit adapts quietly; a value the user chose and that cannot be met warns).
    public var maxConnectionsSetExplicitly: Bool {
        get { maxConnectionsSource.explicit }
        set { maxConnectionsSource.explicit = newValue }
    }
    private var maxConnectionsSource = Provenance()

    public init() {}
}

/// Where a setting came from (the config file, or a default). Not part of a config's value:
/// two configs with the same settings are equal however they were written, so a rendered
/// and reloaded config (`check-config`, which spells out every default) equals the original.
struct Provenance: Sendable, Equatable {
    var explicit = false
    static func == (_: Provenance, _: Provenance) -> Bool { true }
}
