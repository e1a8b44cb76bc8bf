import AirlockIO
import AirlockSession
import AirlockWire
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
    /// timestamped now, ending in "\n": written with a `TextBuilder` into scratch memory the
    /// encoder's `LogBuffer` keeps (grown to this record's bound when short), then appended to
    /// `e`'s bytes once.
    func encode(into e: inout JSONLineEncoder) {
        let now = e.currentTime()
        var scratch: [UInt8] = []
        swap(&scratch, &e.timestamps.scratch)
        let need = bound
        if scratch.count < need { scratch = [UInt8](repeating: 0, count: Swift.max(need, 2048)) }
        scratch.withUnsafeMutableBytes { buffer in
            var w = TextBuilder(buffer)
            write(into: &w, second: now.second, milliseconds: now.milliseconds)
            e.bytes.append(contentsOf: w.written)
        }
        swap(&scratch, &e.timestamps.scratch)
    }

    /// The most bytes the line can take: the keys, numbers and addresses fit in 768 (the
    /// longest of each: AccessRecordTests); each string may grow six-fold when escaped.
    private var bound: Int {
        var strings = requestID.client.map(TextBuilder.jsonEscapedBound) ?? TextBuilder.jsonEscapedBound(requestID.prefix)
        if let request {
            strings += TextBuilder.jsonEscapedBound(request.method) + TextBuilder.jsonEscapedBound(request.target)
                + TextBuilder.jsonEscapedBound(request.host)
        }
        if let route { strings += TextBuilder.jsonEscapedBound(route) }
        if let task { strings += TextBuilder.jsonEscapedBound(task.state) }
        if let tunnel { strings += TextBuilder.jsonEscapedBound(tunnel) }
        return 768 + strings
    }

    private func write(into w: inout TextBuilder, second: [UInt8], milliseconds: Int) {
        w.append("{\"time\":")
        w.append(bytes: second)
        w.append(decimal: UInt64(milliseconds / 100))
        w.append(decimal: UInt64(milliseconds / 10 % 10))
        w.append(decimal: UInt64(milliseconds % 10))
        w.append("Z\",\"level\":\"info\",\"event\":\"request.access\",\"bytes_in\":")
        w.append(decimal: bytesIn)
        w.append(",\"bytes_out\":")
        w.append(decimal: bytesOut)
        w.append(",\"client\":\"")
        client.append(to: &w)
        w.append("\",\"duration_ms\":")
        w.append(thousandths: durationMillis)
        if let request {
            w.append(",\"host\":")
            w.append(jsonQuoted: request.host, style: .log)
        }
        if incomplete { w.append(",\"incomplete\":true") }
        if intercepted { w.append(",\"intercepted\":true") }
        if let request {
            w.append(",\"method\":")
            w.append(jsonQuoted: request.method, style: .log)
        }
        if let client = requestID.client {
            w.append(",\"request_id\":")
            w.append(jsonQuoted: client, style: .log)
        } else {
            w.append(",\"request_id\":\"")
            w.append(jsonEscaped: requestID.prefix, style: .log)
            w.append(byte: UInt8(ascii: "-"))
            w.append(decimal: requestID.worker)
            w.append(byte: UInt8(ascii: "-"))
            w.append(hex: requestID.serial)
            w.append(byte: UInt8(ascii: "\""))
        }
        if resumed > 0 {
            w.append(",\"resumed\":")
            w.append(decimal: UInt64(resumed))
        }
        if let task, task.metrics.requestSent != 0 {
            task.metrics.reused ? w.append(",\"reused\":true") : w.append(",\"reused\":false")
        }
        if let route {
            w.append(",\"route\":")
            w.append(jsonQuoted: route, style: .log)
        }
        if let task {
            w.append(",\"state\":")
            w.append(jsonQuoted: task.state, style: .log)
        }
        w.append(",\"status\":")
        w.append(decimal: status)
        if let request {
            w.append(",\"target\":")
            w.append(jsonQuoted: request.target, style: .log)
        }
        if let task { Self.writeTimings(task.metrics, into: &w) }
        if let tunnel {
            w.append(",\"tunnel\":")
            w.append(jsonQuoted: tunnel, style: .log)
        }
        if let upstream {
            w.append(",\"upstream\":\"")
            upstream.append(to: &w)
            w.append(byte: UInt8(ascii: "\""))
        }
        if let upstreamTiming {
            w.append(",\"upstream_ms\":")
            w.append(thousandths: upstreamTiming.millis)
            upstreamTiming.reused ? w.append(",\"upstream_reused\":true") : w.append(",\"upstream_reused\":false")
        }
        w.append("}\n")
    }

    /// `,"timings":{...}` with the phases that happened, keys in sorted order (as
    /// `JSONLogHandler` sorts a nested dictionary): connect, dns, request_sent, tls, total, ttfb.
    private static func writeTimings(_ m: TaskMetrics, into w: inout TextBuilder) {
        w.append(",\"timings\":{")
        var first = true
        func field(_ key: StaticString, _ millis: Double?) {
            guard let millis else { return }
            if !first { w.append(byte: UInt8(ascii: ",")) }
            first = false
            w.append(key)
            w.append(thousandths: millis)
        }
        field("\"connect\":", m.connectMillis)
        field("\"dns\":", m.dnsMillis)
        field("\"request_sent\":", m.requestSentMillis)
        field("\"tls\":", m.tlsMillis)
        field("\"total\":", m.totalMillis)
        field("\"ttfb\":", m.ttfbMillis)
        w.append(byte: UInt8(ascii: "}"))
    }
}
