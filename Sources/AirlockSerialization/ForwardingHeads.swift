public import AirlockWire

/// The `http` serializer's canonical re-encoding of heads from the parsed model: the request
/// that goes upstream and the response that goes back. Never copies raw bytes through:
/// hop-by-hop fields are dropped, framing is set by Airlock, `Via` and `X-Request-Id` are
/// added. (The upstream's authority, `authority(_:)`, is the gateway's: it reads an
/// `UpstreamKey`.)
public enum ForwardingHeads {
    /// Origin-form target for the upstream request line.
    public static func upstreamTarget(_ target: RequestTarget) -> String {
        switch target {
        case .origin(let path): return path
        case .absolute(_, _, _, let path): return path
        case .authority(let host, let port): return "\(host):\(port)"
        case .asterisk: return "*"
        }
    }

    /// The request head sent upstream; `host` is the upstream's authority (the gateway's
    /// `authority(key)`, or a fixed upstream's precomputed one).
    /// The request id goes up as `X-Request-Id` (`RequestIDField.write`): the client's own when
    /// kept (`clientID`), else Airlock's from the worker's `idPrefix` and `idSerial`.
    public static func request(_ req: RequestHead, host: String, framing: OutFraming, viaToken: String,
                               viaToken11: String, idSerial: UInt64, clientID: String?, idPrefix: HeadWriter.FieldPrefix, into w: inout HeadWriter) {
        w.requestLine(method: req.method, target: upstreamTarget(req.target))
        w.field("Host", value: host)
        let tokens = HopByHop.connectionTokens(req.headers)
        for i in 0..<req.headers.count {
            switch req.headers.known(at: i) {
            case .host, .expect, .requestID: continue
            default: break
            }
            if HopByHop.isHopByHop(req.headers, at: i, connectionTokens: tokens) { continue }
            w.field(from: req.headers, at: i)
        }
        // Our hop, as one more Via line after the received ones (which went out above, byte
        // for byte): a list field's lines combine in order (RFC 9110 5.3, 7.6.3).
        w.field("Via", value: req.version == .http10 ? "1.0 \(viaToken)" : viaToken11)
        RequestIDField.write(serial: idSerial, client: clientID, ownPrefix: idPrefix, into: &w)
        switch (framing, req.framing) {
        case (.length, .length(let n)): w.field("Content-Length", decimal: n)
        case (.chunked, _): w.field("Transfer-Encoding", value: "chunked")
        case (.none, _) where methodExpectsBody(req.method): w.field("Content-Length", decimal: 0)
        default: break
        }
        w.end()
    }

    public static func methodExpectsBody(_ m: AirlockWire.Method) -> Bool {
        switch m {
        case .post, .put, .patch: return true
        default: return false
        }
    }

    /// How the request body goes upstream, given how the client framed it (a request body is
    /// never close-delimited, RFC 9112 6.3).
    public static func requestFraming(_ client: BodyFraming) -> OutFraming {
        switch client {
        case .chunked: return .chunked
        case .length: return .length
        case .none, .closeDelimited: return .none
        }
    }

    /// How the response body goes to the client, given what upstream sent.
    public static func responseFraming(_ upstream: BodyFraming, clientVersion: HTTPVersion) -> OutFraming {
        switch upstream {
        case .none: return .none
        case .length: return .length
        case .chunked, .closeDelimited: return clientVersion == .http11 ? .chunked : .close
        }
    }

    /// The response head sent to the client (with our Via line: RFC 9110 7.6.3 asks it of
    /// every message a proxy forwards, responses too). `extraFields` writes fields of Airlock's
    /// own after the upstream's (the cache's `Cache-Status`), so the parsed head is
    /// never copied to carry them.
    public static func response(_ resp: ResponseHead, framing: BodyFraming, out: OutFraming,
                                requestMethod: AirlockWire.Method, keepAlive: Bool, clientVersion: HTTPVersion,
                                viaToken: String, viaToken11: String, idSerial: UInt64, clientID: String?,
                                idPrefix: HeadWriter.FieldPrefix, into w: inout HeadWriter,
                                extraFields: (inout HeadWriter) -> Void = { _ in }) {
        w.statusLine(status: resp.status, reason: resp.reason)
        let tokens = HopByHop.connectionTokens(resp.headers)
        for i in 0..<resp.headers.count {
            let known = resp.headers.known(at: i)
            // A HEAD response's Content-Length describes the GET body: keep it as sent.
            if known == .contentLength, requestMethod == .head, resp.status >= 200, resp.status != 204 {
                w.field(from: resp.headers, at: i)
                continue
            }
            // The client gets its task's id, whatever id the upstream answered with.
            if known == .requestID { continue }
            if HopByHop.isHopByHop(resp.headers, at: i, connectionTokens: tokens) { continue }
            w.field(from: resp.headers, at: i)
        }
        extraFields(&w)
        w.field("Via", value: resp.version == .http10 ? "1.0 \(viaToken)" : viaToken11)
        RequestIDField.write(serial: idSerial, client: clientID, ownPrefix: idPrefix, into: &w)
        switch (out, framing) {
        case (.length, .length(let n)): w.field("Content-Length", decimal: n)
        case (.chunked, _): w.field("Transfer-Encoding", value: "chunked")
        default: break
        }
        if !keepAlive {
            w.field("Connection", value: "close")
        } else if clientVersion == .http10 {
            w.field("Connection", value: "keep-alive")
        }
        w.end()
    }

    /// A complete error response with a JSON body.
    /// `error` (the reason code, a token) goes in `X-Airlock-Error` too, so a client that shows
    /// only the status line and headers (curl's "CONNECT tunnel failed, response 403") can still
    /// show why.
    public static func error(status: Int, body: [UInt8], keepAlive: Bool, requestID: String? = nil, retryAfter: Int? = nil,
                             error: String? = nil) -> [UInt8] {
        var w = HeadWriter(capacity: 256)
        w.statusLine(status: status, reason: ReasonPhrase.standard(for: status))
        if let requestID { w.field("X-Request-Id", value: requestID) }
        if let error { w.field("X-Airlock-Error", value: error) }
        w.field("Content-Type", value: "application/json")
        w.field("Content-Length", decimal: UInt64(body.count))
        w.field("Cache-Control", value: "no-store")
        if let retryAfter { w.field("Retry-After", decimal: UInt64(max(0, retryAfter))) }
        if !keepAlive { w.field("Connection", value: "close") }
        w.end()
        return w.bytes + body
    }
}
