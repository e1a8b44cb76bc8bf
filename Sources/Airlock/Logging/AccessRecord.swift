import AirlockIO
import AirlockSession
import Logging

/// The fields of one `request.access` record, written one of two ways with the same bytes:
/// straight into a worker's `LogBuffer` (the per-request path: no metadata dictionary, no key
/// sort, no handler, no String per number), or as swift-log metadata through any other logger.
struct AccessRecord {
    var requestID: RequestID
    var status: Int
    var bytesIn: UInt64
    var bytesOut: UInt64
    /// Milliseconds, rounded to microseconds.
    var durationMillis: Double
    var client: SocketAddress
    /// Method, target and host: nil when no request head was read.
    var request: (method: String, target: String, host: String)?
    var route: String?
    var upstream: SocketAddress?
    var incomplete: Bool
    /// Time to the response head, and whether the upstream connection was reused: nil before
    /// an upstream answered.
    var upstreamTiming: (millis: Double, reused: Bool)?
    /// The task's fields: its final `state`, its `timings` (milliseconds per
    /// `NSURLSessionTaskMetrics` phase that happened) and `reused` (nil when no upstream
    /// connection was used). Nil for a request that never became a task.
    var task: (state: String, metrics: TaskMetrics)?
    /// How a CONNECT tunnel ended (`TunnelEnd`): nil for every other request.
    var tunnel: String? = nil
    /// A request that came inside an intercepted CONNECT's TLS session (`connect: intercept`).
    var intercepted = false
    /// Resumed requests that continued this response after its upstream broke (`resume:`).
    var resumed = 0

    static let event: Logger.Message = "request.access"

    var metadata: Logger.Metadata {
        var md: Logger.Metadata = [
            "request_id": .stringConvertible(requestID),
            "status": .stringConvertible(status),
            "bytes_in": .stringConvertible(bytesIn),
            "bytes_out": .stringConvertible(bytesOut),
            "duration_ms": .stringConvertible(durationMillis),
            "client": .string(client.description),
        ]
        if let request {
            md["method"] = .string(request.method)
            md["target"] = .string(request.target)
            md["host"] = .string(request.host)
        }
        if let route { md["route"] = .string(route) }
        if let upstream { md["upstream"] = .string(upstream.description) }
        if incomplete { md["incomplete"] = .stringConvertible(true) }
        if let upstreamTiming {
            md["upstream_ms"] = .stringConvertible(upstreamTiming.millis)
            md["upstream_reused"] = .stringConvertible(upstreamTiming.reused)
        }
        if let task {
            var timings: Logger.Metadata = [:]
            for (name, millis) in task.metrics.phases { timings[name] = .stringConvertible(millis) }
            md["timings"] = .dictionary(timings)
            if task.metrics.requestSent != 0 { md["reused"] = .stringConvertible(task.metrics.reused) }
            md["state"] = .string(task.state)
        }
        if let tunnel { md["tunnel"] = .string(tunnel) }
        if intercepted { md["intercepted"] = .stringConvertible(true) }
        if resumed > 0 { md["resumed"] = .stringConvertible(resumed) }
        return md
    }

    /// The line `JSONLogHandler` writes for `metadata` at level info (keys in sorted order),
    /// timestamped now, ending in "\n".
    func encode(into e: inout JSONLineEncoder) {
        e.append("{\"time\":")
        e.appendTimestamp()
        e.append(",\"level\":\"info\",\"event\":\"request.access\",\"bytes_in\":")
        e.appendInteger(bytesIn)
        e.append(",\"bytes_out\":")
        e.appendInteger(bytesOut)
        e.append(",\"client\":\"")
        client.appendDescription(to: &e.bytes)
        e.append("\"")
        e.append(",\"duration_ms\":")
        e.appendThousandths(durationMillis)
        if let request {
            e.append(",\"host\":")
            e.appendString(request.host)
        }
        if incomplete { e.append(",\"incomplete\":true") }
        if intercepted { e.append(",\"intercepted\":true") }
        if let request {
            e.append(",\"method\":")
            e.appendString(request.method)
        }
        if let client = requestID.client {
            e.append(",\"request_id\":")
            e.appendString(client)
        } else {
            e.append(",\"request_id\":\"")
            e.appendStringContents(requestID.prefix)
            e.append("-")
            e.appendInteger(requestID.worker)
            e.append("-")
            e.appendHex(requestID.serial)
            e.append("\"")
        }
        if resumed > 0 {
            e.append(",\"resumed\":")
            e.appendInteger(UInt64(resumed))
        }
        if let task, task.metrics.requestSent != 0 {
            task.metrics.reused ? e.append(",\"reused\":true") : e.append(",\"reused\":false")
        }
        if let route {
            e.append(",\"route\":")
            e.appendString(route)
        }
        if let task {
            e.append(",\"state\":")
            e.appendString(task.state)
        }
        e.append(",\"status\":")
        e.appendInteger(status)
        if let request {
            e.append(",\"target\":")
            e.appendString(request.target)
        }
        if let task { Self.encodeTimings(task.metrics, into: &e) }
        if let tunnel {
            e.append(",\"tunnel\":")
            e.appendString(tunnel)
        }
        if let upstream {
            e.append(",\"upstream\":\"")
            upstream.appendDescription(to: &e.bytes)
            e.append("\"")
        }
        if let upstreamTiming {
            e.append(",\"upstream_ms\":")
            e.appendThousandths(upstreamTiming.millis)
            e.append(",\"upstream_reused\":")
            upstreamTiming.reused ? e.append("true") : e.append("false")
        }
        e.append("}\n")
    }

    /// `,"timings":{...}` with the phases that happened, keys in sorted order (as
    /// `JSONLogHandler` sorts a nested dictionary): connect, dns, request_sent, tls, total, ttfb.
    private static func encodeTimings(_ m: TaskMetrics, into e: inout JSONLineEncoder) {
        e.append(",\"timings\":{")
        var first = true
        func field(_ key: StaticString, _ millis: Double?) {
            guard let millis else { return }
            if !first { e.append(",") }
            first = false
            e.append(key)
            e.appendThousandths(millis)
        }
        field("\"connect\":", m.connectMillis)
        field("\"dns\":", m.dnsMillis)
        field("\"request_sent\":", m.requestSentMillis)
        field("\"tls\":", m.tlsMillis)
        field("\"total\":", m.totalMillis)
        field("\"ttfb\":", m.ttfbMillis)
        e.append("}")
    }
}
