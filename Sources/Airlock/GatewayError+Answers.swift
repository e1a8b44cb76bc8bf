import AirlockConfig
import AirlockIO
import AirlockSerialization
import AirlockSession

/// Airlock's own answers that an exchange's executor gives for what it saw (the phases
/// build the rest: `GatewayPhases`, `failToConnect`).
extension GatewayError {
    /// 503 upstream-unreachable with `Retry-After` (`reachability.retry_after` in seconds, at
    /// least one): the route's upstream failed its last probe or refused a connection, and the
    /// circuit is open (or its one trial is in flight), so the request fails fast instead of
    /// waiting for a connect that will fail.
    static func unreachable(_ h: UpstreamHealth, retryAfter: Int) -> GatewayError {
        let snapshot = h.snapshot
        var e = GatewayError(.upstreamUnreachable, status: 503,
                             message: "upstream \(h.upstream) is unreachable" + (snapshot.lastError.map { " (\($0))" } ?? ""),
                             source: .upstream)
        e.extra = [("upstream", .string(h.upstream))]
        e.retryAfter = retryAfter
        return e
    }

    /// 503 upstream-busy: this upstream has `max_connections_per_upstream` connections and the
    /// queue for one is full, or this request waited `upstream_queue_timeout` in it.
    static func upstreamBusy(_ key: UpstreamKey, timedOut: Bool, limits: LimitsConfig) -> GatewayError {
        let why = timedOut ? "no connection to it came free within \(limits.upstreamQueueTimeout)"
            : "the queue for a connection to it is full"
        var e = GatewayError(.upstreamBusy, status: 503,
                             message: "upstream \(key.host):\(key.port) has max_connections_per_upstream "
                                 + "(\(limits.maxConnectionsPerUpstream)) connections and \(why)", source: .upstream)
        e.extra = [("reason", .string(timedOut ? "queue-timeout" : "queue-full"))]
        e.retryAfter = 1
        return e
    }

    /// 499 client-aborted: the client went away (closed, stopped reading, failed) mid-exchange.
    static func clientAborted(_ event: StreamEvent) -> GatewayError {
        let why: String
        switch event {
        case .eof: why = "client closed the connection"
        case .writeTimeout: why = "client stopped reading"
        case .error, .readTimeout, .tlsFailed, .connected: why = "client connection failed"
        }
        return GatewayError(.clientAborted, status: 499, message: why, source: .client)
    }

    /// 400 request-serialization-failed: a `validate_multipart` route refused the body.
    static func multipartRefused(_ e: MultipartError) -> GatewayError {
        var g = GatewayError(.requestSerializationFailed, status: 400, message: e.message, source: .client, mustClose: true)
        g.extra = [("reason", .string(e.reason))]
        return g
    }
}
