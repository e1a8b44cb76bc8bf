import AirlockWire

/// An error that reaches the client as a status and a JSON body, and the log as a
/// `request.error` record. One struct over a private-ish code enum: the code's raw value is
/// the stable reason (fit for a metric label), the message is for humans.
struct GatewayError: Error, Sendable {
    enum Code: String, Sendable {
        case badRequest = "bad-request"                 // wire reason used instead when known
        case noRoute = "no-route"
        case loopDetected = "loop-detected"
        /// 403: every address the target resolved to is outside the route's egress policy
        /// (`egress:`, and the internal classes on a shared listener). The addresses are in
        /// the `egress.denied` record, never in the body.
        case egressDenied = "egress-denied"
        /// 403: the CONNECT's route says `connect: deny` (the default).
        case connectDenied = "connect-denied"
        /// 403: the CONNECT names a port outside its route's `connect_ports`.
        case connectPortDenied = "connect-port-denied"
        /// 400: a CONNECT that declares a body (Content-Length > 0 or chunked): the bytes behind
        /// a CONNECT head belong to the tunnel, so a framed body there is ambiguous.
        case connectWithBody = "connect-with-body"
        /// 501: the route says `connect: intercept` but no local CA is loaded (the configuration
        /// refuses that at load; kept so the gateway fails closed whatever happens).
        case connectInterceptUnavailable = "connect-intercept-unavailable"
        /// 400: a CONNECT sent inside an intercepted tunnel.
        case connectInsideIntercept = "connect-inside-intercept"
        /// 421: a request inside an intercepted tunnel names another host (or port) than the
        /// CONNECT did (RFC 9110 15.5.20).
        case misdirectedRequest = "misdirected-request"
        case bodyTooLarge = "body-too-large"
        case headerTimeout = "header-timeout"
        case upstreamUnresolvable = "upstream-unresolvable"
        case upstreamRefused = "upstream-refused"
        case upstreamTimeout = "upstream-timeout"
        case upstreamMalformed = "upstream-malformed-response"
        case upstreamClosed = "upstream-closed"
        case untrustedUpstream = "untrusted-upstream"
        /// 502: the TLS handshake with the upstream failed before it sent any handshake message
        /// (a plaintext server: "wrong version number"), so no certificate was there to judge.
        case tlsHandshakeFailed = "tls-handshake-failed"
        case rejectedResponse = "rejected-response"
        /// 503 at once while the route's upstream is unreachable (reachability probes).
        case upstreamUnreachable = "upstream-unreachable"
        /// 503: max_connections_per_upstream reached and the wait queue full or timed out.
        case upstreamBusy = "upstream-busy"
        /// Logged only (nobody is left to answer): the client closed, failed or stopped reading.
        case clientAborted = "client-aborted"
        /// Logged only: an admin cancelled the task (`DELETE /tasks/{id}`); both sides were closed.
        case cancelled = "cancelled"
        /// Logged only: the drain timeout passed with the exchange in flight; both sides were closed.
        case drainTimeout = "drain-timeout"
        /// 400: the route's request serializer cannot build the request to send (its `reason`
        /// says why); nothing reached the upstream.
        case requestSerializationFailed = "request-serialization-failed"
        /// The route's `request.timeout` passed: 504 before any response byte reached the client,
        /// else the response is cut off (logged only).
        case exchangeTimeout = "exchange-timeout"
        /// 504: `Cache-Control: only-if-cached` and the route's cache holds nothing usable
        /// (RFC 9111 5.2.1.7); nothing went upstream.
        case notCached = "not-cached"
    }

    enum Source: String, Sendable { case client, upstream, `internal` }

    let code: Code
    let status: Int
    let reason: String
    let message: String
    let source: Source
    /// After a framing error the connection cannot be trusted any further.
    let mustClose: Bool
    /// More members of the JSON body, after "error" (e.g. "reason", "code").
    var extra: [(String, JSONScalar)] = []

    enum JSONScalar: Sendable {
        case string(String)
        case int(Int)
    }
    /// Set for `rejected-response`: the fields its JSON body adds.
    var rejection: ResponseRejection?
    /// Seconds for a `Retry-After` field (503 upstream-unreachable).
    var retryAfter: Int?

    init(_ code: Code, status: Int, message: String, source: Source, mustClose: Bool = false) {
        self.code = code
        self.status = status
        self.reason = code.rawValue
        self.message = message
        self.source = source
        self.mustClose = mustClose
    }

    /// A wire error in a client request: its own status and reason code; always closes.
    init(wire: WireError) {
        code = .badRequest
        status = wire.status
        reason = wire.reason
        message = wire.detail
        source = .client
        mustClose = true
    }

    /// `NSURLErrorSecureConnectionFailed`, the JSON body's `code` for `tls-handshake-failed`.
    static let secureConnectionFailed = -1200

    /// 502 tls-handshake-failed (code -1200, with NSURLErrorSecureConnectionFailed's text): the
    /// upstream at `address` answered the ClientHello with no TLS, or closed.
    static func tlsHandshakeFailed(_ address: String, _ why: String) -> GatewayError {
        var e = GatewayError(.tlsHandshakeFailed, status: 502,
                             message: "An SSL error has occurred and a secure connection to the server cannot be made. "
                                 + "(the TLS handshake with \(address) failed before any certificate: \(why))",
                             source: .upstream)
        e.extra = [("code", .int(secureConnectionFailed))]
        return e
    }

    /// A malformed upstream response: 502, reason names the wire rule.
    init(upstreamWire wire: WireError) {
        code = .upstreamMalformed
        status = 502
        reason = code.rawValue
        message = "upstream sent a malformed response (\(wire.reason)): \(wire.detail)"
        source = .upstream
        mustClose = false
    }

    /// `{"error": "...", "message": "...", "request_id": "..."}`, with a rejection's fields
    /// (`reason`, `code`, `message`, `upstream_status`, `content_type`, `url`) when it has one.
    func jsonBody(requestID: String) -> [UInt8] {
        var s = "{\"error\":"
        JSON.appendString(reason, to: &s)
        for (key, value) in extra {
            s += ","
            JSON.appendString(key, to: &s)
            s += ":"
            switch value {
            case .string(let v): JSON.appendString(v, to: &s)
            case .int(let v): s += String(v)
            }
        }
        if let rejection {
            rejection.appendFields(to: &s)
        } else {
            s += ",\"message\":"
            JSON.appendString(message, to: &s)
        }
        s += ",\"request_id\":"
        JSON.appendString(requestID, to: &s)
        s += "}\n"
        return Array(s.utf8)
    }
}

/// JSON strings in response bodies (error bodies here, the admin API's documents): AirlockWire's
/// `JSONString` in its `.document` style.
enum JSON {
    static func appendString(_ value: String, to out: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count + 2)
        JSONString.appendQuoted(value, to: &bytes, style: .document)
        out += String(decoding: bytes, as: UTF8.self)
    }
}
