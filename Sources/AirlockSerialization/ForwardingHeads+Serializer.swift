public import AirlockWire

/// The request head on a route with a `request:` block: `ForwardingHeads.request`'s canonical
/// re-encoding, with the route's `http` (or `passthrough`) serializer applied (fields left
/// out, fields added, parameters in the target or as a form body). A separate function, so
/// that routes without the block keep the plain path.
extension ForwardingHeads {
    /// `body`: a form body that replaces the client's empty one (`HTTPRequestSerializer.body`);
    /// it goes out with `Content-Length` and, unless a field already names one, the form
    /// `Content-Type`. The caller writes its bytes after the head.
    public static func request(_ req: RequestHead, serializer s: HTTPRequestSerializer, body: HTTPRequestSerializer.Replacement?,
                               host: String, framing: OutFraming, viaToken: String, viaToken11: String, idSerial: UInt64,
                               clientID: String?, idPrefix: HeadWriter.FieldPrefix, into w: inout HeadWriter) {
        let target = upstreamTarget(req.target)
        w.requestLine(method: req.method, target: s.target(target, method: req.method.name) ?? target)
        w.field("Host", value: host)
        let tokens = HopByHop.connectionTokens(req.headers)
        var sent = Set<String>()
        for i in 0..<req.headers.count {
            switch req.headers.known(at: i) {
            case .host, .expect, .requestID: continue
            default: break
            }
            if HopByHop.isHopByHop(req.headers, at: i, connectionTokens: tokens) { continue }
            let name = HTTPRequestSerializer.lowercased(req.headers.name(at: i))
            if s.drops(name) { continue }
            if name == "content-type", let body, body.replacesClientType { continue }
            sent.insert(name)
            w.field(from: req.headers, at: i)
        }
        let added = s.addedFields(clientSent: { sent.contains($0) })
        for field in added { w.field(name: field.name, value: field.value) }
        w.field("Via", value: req.version == .http10 ? "1.0 \(viaToken)" : viaToken11)
        RequestIDField.write(serial: idSerial, client: clientID, ownPrefix: idPrefix, into: &w)
        if let body {
            if !sent.contains("content-type") && !added.contains(where: { HTTPRequestSerializer.lowercased($0.name) == "content-type" }) {
                w.field("Content-Type", value: body.contentType)
            }
            w.field("Content-Length", decimal: UInt64(body.bytes.count))
        } else {
            switch (framing, req.framing) {
            case (.length, .length(let n)): w.field("Content-Length", decimal: n)
            case (.chunked, _): w.field("Transfer-Encoding", value: "chunked")
            case (.none, _) where methodExpectsBody(req.method): w.field("Content-Length", decimal: 0)
            default: break
            }
        }
        w.end()
    }
}
