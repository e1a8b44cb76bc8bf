#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// One rejected upstream response (`"event":"response.rejected"`) or request refused by the
/// request phase (`"event":"request.rejected"`), as written to the log and kept in the
/// gateway's `RejectLog` for `GET /rejects`.
struct RejectRecord: Sendable {
    /// Wall-clock time of the reject, milliseconds since the Unix epoch.
    var unixMillis: Int64
    var requestID: String
    var route: String
    var method: String
    /// The URL fetched (response side); the target as the client named it (request side).
    var url: String
    var upstream: String
    /// The upstream's status (response side); Airlock's answer (request side).
    var status: Int
    var contentType: String?
    var reason: String
    var code: Int
    var message: String
    /// The underlying error's message (the content-type error under a status error).
    var underlying: String?
    var durationMillis: Double
    var mode: String
    /// The first 1 KiB of the failing body; invalid UTF-8 is replaced with U+FFFD.
    var bodySample: String
    var side: Side = .response

    /// Which phase refused: the request phase (the request never left) or the response filter.
    enum Side: String, Sendable {
        case request, response
    }

    static func nowUnixMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
    }

    /// The log record's fields (the handler adds `time`, `level` and `event`).
    var metadata: Logger.Metadata {
        if side == .request {
            var md: Logger.Metadata = [
                "request_id": .string(requestID),
                "route": .string(route),
                "method": .string(method),
                "target": .string(url),
                "status": .stringConvertible(status),
                "reason": .string(reason),
                "message": .string(message),
                "duration_ms": .stringConvertible((durationMillis * 1000).rounded() / 1000),
                "body_sample": .string(bodySample),
            ]
            if let contentType { md["content_type"] = .string(contentType) }
            return md
        }
        var md: Logger.Metadata = [
            "request_id": .string(requestID),
            "route": .string(route),
            "method": .string(method),
            "url": .string(url),
            "upstream": .string(upstream),
            "status": .stringConvertible(status),
            "reason": .string(reason),
            "code": .stringConvertible(code),
            "message": .string(message),
            "duration_ms": .stringConvertible((durationMillis * 1000).rounded() / 1000),
            "mode": .string(mode),
            "body_sample": .string(bodySample),
        ]
        if let contentType { md["content_type"] = .string(contentType) }
        if let underlying { md["underlying"] = .string(underlying) }
        return md
    }

    /// The record as one JSON object, keys in a fixed order, `time` first.
    func appendJSON(to e: inout JSONLineEncoder) {
        e.append("{\"time\":")
        e.appendTimestamp(seconds: time_t(unixMillis / 1000), milliseconds: Int(unixMillis % 1000))
        e.append(",\"side\":")
        e.appendString(side.rawValue)
        e.append(",\"request_id\":")
        e.appendString(requestID)
        e.append(",\"route\":")
        e.appendString(route)
        e.append(",\"method\":")
        e.appendString(method)
        e.append(",\"url\":")
        e.appendString(url)
        e.append(",\"upstream\":")
        e.appendString(upstream)
        e.append(",\"status\":")
        e.appendValue(.stringConvertible(status))
        e.append(",\"content_type\":")
        if let contentType { e.appendString(contentType) } else { e.append("null") }
        e.append(",\"reason\":")
        e.appendString(reason)
        e.append(",\"code\":")
        e.appendValue(.stringConvertible(code))
        e.append(",\"message\":")
        e.appendString(message)
        e.append(",\"underlying\":")
        if let underlying { e.appendString(underlying) } else { e.append("null") }
        e.append(",\"duration_ms\":")
        e.appendValue(.stringConvertible((durationMillis * 1000).rounded() / 1000))
        e.append(",\"mode\":")
        e.appendString(mode)
        e.append(",\"body_sample\":")
        e.appendString(bodySample)
        e.append("}")
    }
}
