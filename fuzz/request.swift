import AirlockSerialization
@testable import AirlockWire

// Fuzz target `request`: a client connection's bytes, as ClientConnection reads them.
//
// Input: one control byte (see `Control`; option bit 0 selects small WireLimits), then the
// bytes the client sends. Up to four pipelined requests are read: HeadScanner finds each head,
// RequestParser parses it, BodyDecoder consumes its body. The whole connection is run twice,
// with every byte arrived at once and in pieces chosen by the control byte; both runs must
// read the same heads and bodies. For each parsed request (first run) the harness checks:
//   - the fields, request line, framing, Host, keep-alive and Expect against rules written out
//     again here (fuzz/Support/Driver.swift), not via the parser's helpers;
//   - re-encoded canonically with HeadWriter, it parses again to the same method, target,
//     version, fields, framing and authority, and re-encoding that gives the same bytes;
//   - re-encoded by ForwardingHeads.request (the gateway's own upstream encoder), it parses
//     again with the same method and origin-form target, the hop-by-hop fields gone, the
//     others in order byte for byte, and the body framing the gateway announces;
//   - its body: never more payload than bytes, a Content-Length body yields exactly that many
//     bytes, a chunked body satisfies the chunked grammar and round-trips through ChunkedEncoder.
// Also: RequestParser on the raw input (no scanner) must not crash, and accepts only what the
// scanner measures as exactly one head.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let control = Control(byte: data[0])
    let stream = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let limits = control.option & 1 == 0 ? WireLimits() : smallLimits

    RequestHarness.parserAgreesWithScanner(stream, limits: limits)
    var whole = Feed(all: stream)
    let first = RequestHarness.connection(&whole, limits: limits, checks: true)
    var split = Feed(split: stream, control: control)
    let second = RequestHarness.connection(&split, limits: limits, checks: false)
    check(first == second, "split arrival changed the outcome:\n  whole: \(first)\n  split: \(second)")
    return 0
}

enum RequestHarness {
    typealias Step = ConnectionStep<Facts>

    struct Facts: Equatable {
        var method: Method
        var target: RequestTarget
        var version: HTTPVersion
        var fields: [Field]
        var framing: BodyFraming
        var host: String
        var port: UInt16?
        var keepAlive: Bool
        var expectsContinue: Bool

        init(_ h: RequestHead) {
            method = h.method; target = h.target; version = h.version; fields = fieldList(h.headers)
            framing = h.framing; host = h.host; port = h.port; keepAlive = h.keepAlive
            expectsContinue = h.expectsContinue
        }
    }

    static func connection(_ feed: inout Feed, limits: WireLimits, checks: Bool) -> [Step] {
        var steps: [Step] = []
        // Header storage is donated from one head to the next, as the workers do.
        var spare = HTTPHeaders()
        for _ in 0..<4 {
            while feed.available == 0 {
                if !feed.receive() { return steps }
            }
            let read = readHead(&feed, kind: .request, limits: limits)
            steps.append(.head(read))
            guard case .head(let length) = read else { return steps }

            let raw = copyHead(feed, length: length)
            defer { raw.deallocate() }
            let headBytes = Array(raw)
            let parsed: Result<RequestHead, WireError>
            do throws(WireError) {
                parsed = .success(try RequestParser.parse(UnsafeRawBufferPointer(raw), limits: limits,
                                                          reusing: consume spare))
            } catch {
                parsed = .failure(error)
            }
            spare = HTTPHeaders()
            feed.pos += length
            guard case .success(var head) = parsed else {
                if case .failure(let e) = parsed { steps.append(.parseError(e.code)) }
                return steps
            }
            steps.append(.parsed(Facts(head)))
            if checks {
                checkHead(head, raw: headBytes, limits: limits)
                reencodeCanonically(head)
                reencodeForwarded(head)
                reencodeSerialized(head)
            }
            let body = readBody(&feed, framing: head.framing)
            steps.append(.body(body))
            spare = head.headers
            head.headers = HTTPHeaders()
            guard body.complete else { return steps }
        }
        return steps
    }

    /// Any bytes handed straight to the parser: no crash, and an accepted head is exactly what
    /// the scanner would measure.
    static func parserAgreesWithScanner(_ bytes: UnsafeRawBufferPointer, limits: WireLimits) {
        let feed = Feed(all: bytes)
        let accepted = (try? feed.withBuffered(max: bytes.count) { b throws(WireError) in
            try RequestParser.parse(b, limits: limits)
        }) != nil
        guard accepted else { return }
        var scanner = HeadScanner(kind: .request, limits: limits)
        let length = try? feed.withBuffered(max: scanner.window) { b throws(WireError) in try scanner.scan(b) }
        check(length == bytes.count, "parser accepted \(bytes.count) bytes the scanner measures as \(String(describing: length))")
    }

    // MARK: - The parsed head against the rules

    static func checkHead(_ head: RequestHead, raw: [UInt8], limits: WireLimits) {
        check(raw.count <= limits.headerBytes, "head of \(raw.count) bytes over the limit")
        check(raw.suffix(4) == [0x0D, 0x0A, 0x0D, 0x0A], "head does not end with CRLF CRLF")
        let fields = fieldList(head.headers)
        check(fields.count <= limits.headerCount, "\(fields.count) fields over the limit")
        checkFields(head.headers)
        let lines = headLines(raw, kind: .request)
        check(fields == lines.fields, "fields \(fields) but the head says \(lines.fields)")

        // Request line: method SP target SP version, within the limit.
        let line = lines.start
        check(line.count <= limits.requestLineBytes, "request line of \(line.count) bytes over the limit")
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false).map { Array($0) }
        check(parts.count == 3, "request line \(show(line)) is not three parts")
        check(parts[0] == Ref.bytes(head.method.name) && parts[0].allSatisfy(Ref.isTchar), "method \(head.method)")
        check(Method(name: head.method.name) == head.method, "method \(head.method) not canonical")
        check(parts[2] == Ref.bytes(head.version.text), "version \(head.version)")
        let target = parts[1]
        check(!target.isEmpty && target.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x23 }, "target \(show(target))")
        switch head.target {
        case .origin(let path):
            check(head.method != .connect && Ref.bytes(path) == target && target.first == 0x2F, "origin \(show(target))")
        case .absolute(let scheme, let host, let port, let path):
            check(head.method != .connect, "absolute-form CONNECT")
            let prefix = Ref.bytes(scheme.rawValue + "://")
            check(Ref.lower(target.prefix(prefix.count)) == prefix, "scheme of \(show(target))")
            let rest = target[prefix.count...]
            let authorityEnd = rest.firstIndex { $0 == 0x2F || $0 == 0x3F } ?? rest.endIndex
            let authority = splitAuthority(Array(rest[..<authorityEnd]))
            check(Ref.lower(authority.host) == Ref.bytes(host) && authority.port == port.map(Int.init),
                  "authority of \(show(target)) parsed as \(host) \(String(describing: port))")
            check(Ref.isCleanHost(host) && port != 0, "host \(host) port \(String(describing: port))")
            let tail = Array(rest[authorityEnd...])
            let expected = tail.isEmpty ? [0x2F] : (tail.first == 0x3F ? [0x2F] + tail : tail)
            check(Ref.bytes(path) == expected, "path \(path) of \(show(target))")
        case .authority(let host, let port):
            check(head.method == .connect, "authority-form \(show(target)) with \(head.method)")
            let authority = splitAuthority(target)
            check(Ref.lower(authority.host) == Ref.bytes(host) && authority.port == Int(port) && port != 0,
                  "authority \(show(target)) parsed as \(host):\(port)")
            check(Ref.isCleanHost(host), "host \(host)")
        case .asterisk:
            check(head.method == .options && target == [0x2A], "asterisk-form with \(head.method)")
        }

        // Framing.
        switch referenceFraming(fields, version: head.version) {
        case .refused: fail("framing fields should have been refused: \(fields)")
        case .nothing: check(head.framing == .none, "framing \(head.framing) without framing fields")
        case .framing(let f): check(head.framing == f, "framing \(head.framing), the fields say \(f)")
        }

        // Host (RFC 9112 3.2): at most one, exactly one in HTTP/1.1, always valid when non-empty.
        let hosts = fields.filter { $0.named("host") }
        check(hosts.count <= 1 && (head.version == .http10 || hosts.count == 1), "\(hosts.count) Host fields")
        if let value = hosts.first?.value, !value.isEmpty {
            let a = splitAuthority(value)
            check(Ref.isCleanHost(String(decoding: Ref.lower(a.host), as: UTF8.self)), "Host \(show(value)) accepted")
            check(a.port.map { (1...65535).contains($0) } ?? true, "Host port \(show(value)) accepted")
        }
        switch head.target {
        case .absolute(_, let host, let port, _):
            check(head.host == host && head.port == port, "authority \(head.host) not the target's")
        case .authority(let host, let port):
            check(head.host == host && head.port == port, "authority \(head.host) not the target's")
        case .origin, .asterisk:
            if let value = hosts.first?.value, !value.isEmpty {
                let a = splitAuthority(value)
                check(Ref.bytes(head.host) == Ref.lower(a.host) && head.port.map(Int.init) == a.port,
                      "authority \(head.host) \(String(describing: head.port)) from Host \(show(value))")
            } else {
                check(head.version == .http10 && head.host.isEmpty && head.port == nil, "no Host but host \(head.host)")
            }
        }

        check(head.keepAlive == referenceKeepAlive(fields, version: head.version), "keepAlive \(head.keepAlive)")
        let expects = head.version == .http11
            && fields.contains { $0.named("expect") && Ref.lower($0.value) == Ref.bytes("100-continue") }
        check(head.expectsContinue == expects, "expectsContinue \(head.expectsContinue)")
    }

    // MARK: - Re-encoding

    static func targetText(_ t: RequestTarget) -> String {
        switch t {
        case .origin(let path): path
        case .absolute(let scheme, let host, let port, let path):
            "\(scheme.rawValue)://\(host)\(port.map { ":\($0)" } ?? "")\(path)"
        case .authority(let host, let port): "\(host):\(port)"
        case .asterisk: "*"
        }
    }

    static func canonicalBytes(_ head: RequestHead) -> [UInt8] {
        var w = HeadWriter()
        w.requestLine(method: head.method, target: targetText(head.target))
        for i in 0..<head.headers.count { w.field(from: head.headers, at: i) }
        w.end()
        return w.bytes
    }

    /// Every field kept, so the message must mean the same after a parse. HeadWriter always
    /// writes HTTP/1.1: an HTTP/1.0 request without a usable Host may then be refused for that.
    static func reencodeCanonically(_ head: RequestHead) {
        let bytes = canonicalBytes(head)
        let result = reparse(bytes, kind: .request, limits: looseLimits) { b throws(WireError) in
            try RequestParser.parse(b, limits: looseLimits)
        }
        switch result {
        case .success(let again):
            let a = Facts(again), h = Facts(head)
            check(a.method == h.method && a.target == h.target && a.fields == h.fields && a.framing == h.framing
                  && a.host == h.host && a.port == h.port && a.version == .http11,
                  "re-encoded request means something else:\n  \(h)\n  \(a)\n  \(show(bytes))")
            if head.version == .http11 {
                check(a.keepAlive == h.keepAlive && a.expectsContinue == h.expectsContinue, "re-encoded keep-alive/expect")
            }
            check(canonicalBytes(again) == bytes, "canonical encoding not stable: \(show(bytes))")
        case .failure(let e):
            let hosts = fieldList(head.headers).filter { $0.named("host") }
            let hostless: Bool
            switch head.target {
            case .origin, .asterisk: hostless = hosts.isEmpty || hosts[0].value.isEmpty
            default: hostless = hosts.isEmpty
            }
            check(head.version == .http10 && hostless && (e.code == .missingHost || e.code == .badHost),
                  "re-encoded request refused: \(e)\n  \(show(bytes))")
        }
    }

    /// A route's `http` request serializer (issue #13) as the request phase runs it. Made per
    /// input: a process-wide one would be reported by LeakSanitizer at exit.
    static func routeSerializer() -> HTTPRequestSerializer {
        let config = try! RequestSerializationConfig(
            headers: [.init(name: "X-Api-Version", value: "2")],
            overrideHeaders: [.init(name: "User-Agent", value: "airlock/1")],
            removeHeaders: ["Cookie"],
            parameters: ["key": "value", "nested": ["a": ["1", "2"]]],
            authorization: .basic(username: "u", password: "p"))
        return HTTPRequestSerializer(config: config)
    }

    /// What the gateway sends upstream on a route with that serializer: it parses again, with
    /// Cookie left out, exactly the route's User-Agent, the default and Authorization fields
    /// present, the parameters at the end of a GET/HEAD/DELETE target, and a form body
    /// announced for a body method the client sent no body with.
    static func reencodeSerialized(_ head: RequestHead) {
        guard head.method != .connect else { return }
        let s = routeSerializer()
        var body: HTTPRequestSerializer.Replacement?
        if case .replace(let r) = s.body(method: head.method.name, clientBodyEmpty: head.framing == .none || head.framing == .length(0)) {
            body = r
        }
        var w = HeadWriter()
        ForwardingHeads.request(head, serializer: s, body: body, host: "upstream.test:8080",
                                framing: ForwardingHeads.requestFraming(head.framing), viaToken: "airlock",
                                viaToken11: "1.1 airlock", idSerial: 0x2a, clientID: RequestIDField.clientID(in: head.headers),
                                idPrefix: requestIDPrefix, into: &w)
        let bytes = w.bytes
        let result = reparse(bytes, kind: .request, limits: looseLimits) { b throws(WireError) in
            try RequestParser.parse(b, limits: looseLimits)
        }
        guard case .success(let again) = result else {
            fail("serialized request refused: \(result)\n  \(show(bytes))")
        }
        let got = fieldList(again.headers)
        check(!got.contains { $0.named("cookie") }, "serialized: remove_headers left a Cookie")
        check(got.filter { $0.named("user-agent") }.map(\.value) == [Ref.bytes("airlock/1")], "serialized: User-Agent is the route's alone")
        check(got.contains { $0.named("x-api-version") }, "serialized: the default field is missing")
        check(got.contains { $0.named("authorization") }, "serialized: Authorization is missing")
        if s.parametersInURI(head.method.name), head.target != .asterisk {
            check(again.target.originFormText.hasSuffix(s.query), "serialized: parameters missing from \(again.target)")
        }
        if let body { check(again.framing == .length(UInt64(body.bytes.count)), "serialized: form body framing \(again.framing)") }
    }

    /// What the gateway sends upstream (ForwardingHeads.request, from AirlockSerialization).
    static func reencodeForwarded(_ head: RequestHead) {
        guard head.method != .connect else { return }   // refused with 501 before forwarding
        let out = ForwardingHeads.requestFraming(head.framing)
        var w = HeadWriter()
        ForwardingHeads.request(head, host: "upstream.test:8080", framing: out, viaToken: "airlock",
                                viaToken11: "1.1 airlock", idSerial: 0x2a, clientID: RequestIDField.clientID(in: head.headers),
                                idPrefix: requestIDPrefix, into: &w)
        let bytes = w.bytes
        let result = reparse(bytes, kind: .request, limits: looseLimits) { b throws(WireError) in
            try RequestParser.parse(b, limits: looseLimits)
        }
        guard case .success(let again) = result else {
            fail("forwarded request refused: \(result)\n  \(show(bytes))")
        }
        check(again.method == head.method && again.version == .http11, "forwarded method/version")
        switch head.target {
        case .origin, .absolute:
            check(again.target == .origin(path: head.target.originFormText), "forwarded target \(again.target)")
        case .asterisk:
            check(again.target == .asterisk, "forwarded target \(again.target)")
        case .authority:
            fail("unreachable")
        }
        check(again.host == "upstream.test" && again.port == 8080, "forwarded authority \(again.host)")
        let bodyExpected: Bool
        switch head.method {
        case .post, .put, .patch: bodyExpected = true
        default: bodyExpected = false
        }
        let framing = head.framing == .none && bodyExpected ? .length(0) : head.framing
        check(again.framing == framing, "forwarded framing \(again.framing), sent \(head.framing)")

        let fields = fieldList(head.headers)
        let hop = HopByHopModel(fields)
        var expected = [Field(name: Ref.bytes("Host"), value: Ref.bytes("upstream.test:8080"))]
        // Received Via lines are forwarded byte for byte with the other fields; ours follows.
        expected += fields.filter { !$0.named("host") && !$0.named("expect") && !$0.named("x-request-id") && !hop.drops($0) }
        let ours = head.version == .http10 ? "1.0 airlock" : "1.1 airlock"
        expected.append(Field(name: Ref.bytes("Via"), value: Ref.bytes(ours)))
        // One request id: the client's when it sent exactly one well-formed id, else Airlock's.
        let ids = fields.filter { $0.named("x-request-id") }
        let kept = RequestIDField.clientID(in: head.headers)
        check(kept == nil || ids.count == 1, "a client id is kept only when it is the only one")
        expected.append(Field(name: Ref.bytes("X-Request-Id"), value: Ref.bytes(kept ?? "fuzz-0-2a")))
        switch framing {
        case .length(let n): expected.append(Field(name: Ref.bytes("Content-Length"), value: Ref.bytes(String(n))))
        case .chunked: expected.append(Field(name: Ref.bytes("Transfer-Encoding"), value: Ref.bytes("chunked")))
        default: break
        }
        let got = fieldList(again.headers)
        check(got == expected, "forwarded fields\n  \(got)\n  expected \(expected)\n  from \(fields)")
    }
}
