import AirlockConfig
import AirlockIO
import AirlockWire
import Logging

/// What the gateway's phases (`GatewayPhases`) read, as one value a test can make without an
/// event loop: a worker's routes and body limit, the gateway's `Via` token, request id prefix
/// and own listeners (the loop and egress checks), and where records and counters go. `Worker` keeps one, made
/// again when a reload changes its routes or limits.
struct PhaseContext {
    /// The configured routes, compiled (an exchange keeps the `Route` it started with).
    var routes: [Route]
    /// `limits.body_bytes`: a declared request body over it is refused (413).
    var bodyBytes: Int64
    /// The `Via` pseudonym of this process; seeing it on an incoming request means a loop.
    var viaToken: String
    /// The `Via` element added to HTTP/1.1 requests ("1.1 <token>").
    var via11: String
    /// "X-Request-Id: <prefix>-<worker>-": the fixed part of the worker's request id field.
    var idPrefix: HeadWriter.FieldPrefix
    /// The proxy and admin listeners' bound addresses: never denied by an egress policy (the
    /// loop check answers them, 508).
    var ownListeners: OwnListeners
    /// Counters (`GET /metrics`).
    var metrics: GatewayMetrics
    /// The reject records' ring (`GET /rejects`).
    var rejects: RejectLog
    /// Where every record goes.
    var logger: Logger
    /// Whether access records are written (level info or lower).
    var logsAccess: Bool
    /// Where access records are encoded directly (`AccessRecord`); nil: through `logger`.
    var accessLog: LogBuffer?
    /// Where task lifecycle events go (`GET /events`); nil without an admin listener.
    var taskEvents: TaskEventHub?

    func isSelf(_ address: SocketAddress) -> Bool { ownListeners.contains(address) }
}
