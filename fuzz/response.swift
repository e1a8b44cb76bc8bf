import AirlockSerialization
@testable import AirlockWire

// Fuzz target `response`: an upstream connection's bytes, as readResponseHead / relayBody read them.
//
// Input: one control byte, then the bytes the upstream sends. Control option bits 2-4 pick the
// request method the responses answer (GET HEAD POST CONNECT OPTIONS PUT DELETE GET), bit 5
// small WireLimits, bit 6 an HTTP/1.0 client, bit 7 a client that does not keep the connection.
// Up to four responses are read (interim 1xx ones are followed by the final one, as the
// gateway absorbs them): HeadScanner, ResponseParser.parse (the gateway's call, no field-count
// limit), framing(requestMethod:), BodyDecoder. Run twice, all at once and split by the control
// byte; both runs must agree. For each parsed response (first run):
//   - status line, fields, declared framing, framing for the method, keep-alive checked against
//     rules written out again (fuzz/Support/Driver.swift); ResponseParser.parse(_:limits:) agrees;
//   - re-encoded canonically with HeadWriter it parses again to the same status, reason, fields
//     and framing, and re-encoding that gives the same bytes;
//   - re-encoded by ForwardingHeads.response (what the gateway sends its client) it parses again
//     with hop-by-hop fields gone, the rest in order, and the framing the gateway announces;
//   - its body as in the request target (Content-Length exact, chunked grammar and round trip).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let control = Control(byte: data[0])
    let stream = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let setup = ResponseHarness.Setup(control)

    ResponseHarness.parserAgreesWithScanner(stream, limits: setup.limits)
    var whole = Feed(all: stream)
    let first = ResponseHarness.connection(&whole, setup, checks: true)
    var split = Feed(split: stream, control: control)
    let second = ResponseHarness.connection(&split, setup, checks: false)
    check(first == second, "split arrival changed the outcome:\n  whole: \(first)\n  split: \(second)")
    return 0
}

enum ResponseHarness {
    struct Setup {
        var method: Method
        var limits: WireLimits
        var clientVersion: HTTPVersion
        var clientKeepAlive: Bool

        init(_ c: Control) {
            let methods: [Method] = [.get, .head, .post, .connect, .options, .put, .delete, .get]
            method = methods[c.option]
            limits = c.byte & 0x20 == 0 ? WireLimits() : smallLimits
            clientVersion = c.byte & 0x40 == 0 ? .http11 : .http10
            clientKeepAlive = c.byte & 0x80 == 0
        }
    }

    typealias Step = ConnectionStep<Facts>

    struct Facts: Equatable {
        var version: HTTPVersion
        var status: Int
        var reason: String
        var fields: [Field]
        var keepAlive: Bool
        var declaredFraming: BodyFraming

        init(_ h: ResponseHead) {
            version = h.version; status = h.status; reason = h.reason; fields = fieldList(h.headers)
            keepAlive = h.keepAlive; declaredFraming = h.declaredFraming
        }
    }

    static func connection(_ feed: inout Feed, _ setup: Setup, checks: Bool) -> [Step] {
        var steps: [Step] = []
        var spare = HTTPHeaders()
        for _ in 0..<4 {
            while feed.available == 0 {
                if !feed.receive() { return steps }
            }
            let read = readHead(&feed, kind: .response, limits: setup.limits)
            steps.append(.head(read))
            guard case .head(let length) = read else { return steps }

            let raw = copyHead(feed, length: length)
            defer { raw.deallocate() }
            let headBytes = Array(raw)
            let parsed: Result<ResponseHead, WireError>
            do throws(WireError) {
                parsed = .success(try ResponseParser.parse(UnsafeRawBufferPointer(raw), reusing: consume spare))
            } catch {
                parsed = .failure(error)
            }
            spare = HTTPHeaders()
            feed.pos += length
            if checks { limitedParseAgrees(UnsafeRawBufferPointer(raw), parsed, limits: setup.limits) }
            guard case .success(var head) = parsed else {
                if case .failure(let e) = parsed { steps.append(.parseError(e.code)) }
                return steps
            }
            steps.append(.parsed(Facts(head)))
            if checks {
                checkHead(head, raw: headBytes, setup)
                reencodeCanonically(head)
                reencodeForwarded(head, setup)
            }
            let framing = head.framing(requestMethod: setup.method)
            let body = readBody(&feed, framing: framing)
            steps.append(.body(body))
            spare = head.headers
            head.headers = HTTPHeaders()
            guard body.complete, head.status != 101 else { return steps }
            if setup.method == .connect && (200...299).contains(head.status) { return steps }   // a tunnel now
        }
        return steps
    }

    static func parserAgreesWithScanner(_ bytes: UnsafeRawBufferPointer, limits: WireLimits) {
        let feed = Feed(all: bytes)
        let accepted = (try? feed.withBuffered(max: bytes.count) { b throws(WireError) in
            try ResponseParser.parse(b)
        }) != nil
        guard accepted, bytes.count <= limits.headerBytes else { return }
        var scanner = HeadScanner(kind: .response, limits: limits)
        let length = try? feed.withBuffered(max: scanner.window) { b throws(WireError) in try scanner.scan(b) }
        check(length == bytes.count, "parser accepted \(bytes.count) bytes the scanner measures as \(String(describing: length))")
    }

    /// ResponseParser.parse(_:limits:) gives the same head, or refuses it only for a limit.
    static func limitedParseAgrees(_ raw: UnsafeRawBufferPointer, _ unlimited: Result<ResponseHead, WireError>,
                                   limits: WireLimits) {
        let limited: Result<ResponseHead, WireError>
        do throws(WireError) {
            limited = .success(try ResponseParser.parse(raw, limits: limits))
        } catch {
            limited = .failure(error)
        }
        switch (unlimited, limited) {
        case (.success(let a), .success(let b)):
            check(Facts(a) == Facts(b), "parse with limits gave another head")
        case (.failure(let a), .failure(let b)):
            check(a.code == b.code || b.code == .tooManyHeaders, "parse errors \(a) vs \(b)")
        case (.success(let a), .failure(let b)):
            check(b.code == .tooManyHeaders && a.headers.count > limits.headerCount, "parse with limits refused: \(b)")
        case (.failure(let a), .success):
            fail("parse with limits accepted what the unlimited parse refused: \(a)")
        }
    }

    static func checkHead(_ head: ResponseHead, raw: [UInt8], _ setup: Setup) {
        check(raw.count <= setup.limits.headerBytes, "head of \(raw.count) bytes over the limit")
        check(raw.suffix(4) == [0x0D, 0x0A, 0x0D, 0x0A], "head does not end with CRLF CRLF")
        let fields = fieldList(head.headers)
        checkFields(head.headers)
        let lines = headLines(raw, kind: .response)
        check(fields == lines.fields, "fields \(fields) but the head says \(lines.fields)")

        // status-line = HTTP-version SP 3DIGIT [SP reason]
        let line = lines.start
        check(line.count >= 12 && Array(line[0..<8]) == Ref.bytes(head.version.text) && line[8] == 0x20,
              "status line \(show(line))")
        let digits = line[9..<12]
        check(digits.allSatisfy { (0x30...0x39).contains($0) }
              && digits.reduce(0, { $0 * 10 + Int($1 - 0x30) }) == head.status && (100...999).contains(head.status),
              "status \(head.status) from \(show(line))")
        if line.count > 12 {
            check(line[12] == 0x20, "no SP after the status code: \(show(line))")
            let reason = line[13...]
            check(reason.allSatisfy(Ref.isFieldValueByte), "reason bytes \(show(line))")
            check(head.reason == String(decoding: reason, as: UTF8.self), "reason \(head.reason)")
        } else {
            check(head.reason.isEmpty, "reason \(head.reason) of \(show(line))")
        }

        switch referenceFraming(fields, version: head.version) {
        case .refused: fail("framing fields should have been refused: \(fields)")
        case .nothing: check(head.declaredFraming == .closeDelimited, "declared \(head.declaredFraming) without fields")
        case .framing(let f): check(head.declaredFraming == f, "declared \(head.declaredFraming), the fields say \(f)")
        }
        // RFC 9112 6.3 items 1-2.
        let s = head.status
        let expected: BodyFraming
        if setup.method == .head || (100...199).contains(s) || s == 204 || s == 304 {
            expected = .none
        } else if setup.method == .connect && (200...299).contains(s) {
            expected = .none
        } else {
            expected = head.declaredFraming
        }
        check(head.framing(requestMethod: setup.method) == expected, "framing for \(setup.method)")
        check(head.keepAlive == referenceKeepAlive(fields, version: head.version), "keepAlive \(head.keepAlive)")
        check(head.isInformational == ((100...199).contains(s) && s != 101), "isInformational")
    }

    static func canonicalBytes(_ head: ResponseHead) -> [UInt8] {
        var w = HeadWriter()
        w.statusLine(status: head.status, reason: head.reason)
        for i in 0..<head.headers.count { w.field(from: head.headers, at: i) }
        w.end()
        return w.bytes
    }

    static func reencodeCanonically(_ head: ResponseHead) {
        let bytes = canonicalBytes(head)
        let result = reparse(bytes, kind: .response, limits: looseLimits) { b throws(WireError) in
            try ResponseParser.parse(b)
        }
        guard case .success(let again) = result else {
            fail("re-encoded response refused: \(result)\n  \(show(bytes))")
        }
        let a = Facts(again), h = Facts(head)
        check(a.status == h.status && a.reason == h.reason && a.fields == h.fields
              && a.declaredFraming == h.declaredFraming && a.version == .http11,
              "re-encoded response means something else:\n  \(h)\n  \(a)\n  \(show(bytes))")
        if head.version == .http11 { check(a.keepAlive == h.keepAlive, "re-encoded keep-alive") }
        check(canonicalBytes(again) == bytes, "canonical encoding not stable: \(show(bytes))")
    }

    /// What the gateway sends its client (ForwardingHeads.response, from AirlockSerialization).
    static func reencodeForwarded(_ head: ResponseHead, _ setup: Setup) {
        let framing = head.framing(requestMethod: setup.method)
        let out = ForwardingHeads.responseFraming(framing, clientVersion: setup.clientVersion)
        let keepAlive = setup.clientKeepAlive && out != .close
        var w = HeadWriter()
        ForwardingHeads.response(head, framing: framing, out: out, requestMethod: setup.method, keepAlive: keepAlive,
                                 clientVersion: setup.clientVersion, viaToken: "airlock", viaToken11: "1.1 airlock",
                                 idSerial: 0x2a, clientID: nil, idPrefix: requestIDPrefix, into: &w)
        let bytes = w.bytes
        let result = reparse(bytes, kind: .response, limits: looseLimits) { b throws(WireError) in
            try ResponseParser.parse(b)
        }
        guard case .success(let again) = result else {
            fail("forwarded response refused: \(result)\n  \(show(bytes))")
        }
        check(again.status == head.status && again.reason == head.reason && again.version == .http11,
              "forwarded status line")
        check(again.keepAlive == keepAlive, "forwarded keep-alive \(again.keepAlive)")
        let expectedFraming: BodyFraming
        switch (out, framing) {
        case (.length, .length(let n)): expectedFraming = .length(n)
        case (.chunked, _): expectedFraming = .chunked
        case (.close, _): expectedFraming = .closeDelimited
        default: expectedFraming = .none
        }
        check(again.framing(requestMethod: setup.method) == expectedFraming,
              "forwarded framing \(again.framing(requestMethod: setup.method)), expected \(expectedFraming)")

        let fields = fieldList(head.headers)
        let hop = HopByHopModel(fields)
        let s = head.status
        var expected = fields.filter { f in
            if f.named("content-length") && setup.method == .head && s >= 200 && s != 204 { return true }
            // The client gets its task's id, never the upstream's.
            return !f.named("x-request-id") && !hop.drops(f)
        }
        // Our Via line, naming the protocol the upstream answered with, then the request id.
        expected.append(Field(name: Ref.bytes("Via"), value: Ref.bytes(head.version == .http10 ? "1.0 airlock" : "1.1 airlock")))
        expected.append(Field(name: Ref.bytes("X-Request-Id"), value: Ref.bytes("fuzz-0-2a")))
        switch (out, framing) {
        case (.length, .length(let n)): expected.append(Field(name: Ref.bytes("Content-Length"), value: Ref.bytes(String(n))))
        case (.chunked, _): expected.append(Field(name: Ref.bytes("Transfer-Encoding"), value: Ref.bytes("chunked")))
        default: break
        }
        if !keepAlive {
            expected.append(Field(name: Ref.bytes("Connection"), value: Ref.bytes("close")))
        } else if setup.clientVersion == .http10 {
            expected.append(Field(name: Ref.bytes("Connection"), value: Ref.bytes("keep-alive")))
        }
        let got = fieldList(again.headers)
        check(got == expected, "forwarded fields\n  \(got)\n  expected \(expected)\n  from \(fields)")
    }
}
