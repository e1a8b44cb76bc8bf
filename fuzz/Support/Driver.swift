@testable import AirlockWire

// Shared by every fuzz target (AirlockWire is built with -enable-testing, so its internal API
// is visible): the control byte, arrival schedules, the body-decoding loop the
// gateway runs, and a few byte predicates written out again, independently of ByteClass.

/// Stops the run; libFuzzer sees the trap and saves the input as crash-<sha1>.
func fail(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("FUZZ PROPERTY FAILED: " + message(), file: file, line: line)
}

@inline(__always)
func check(_ condition: Bool, _ message: @autoclosure () -> String,
           file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fail(message(), file: file, line: line) }
}

/// Printable form of some bytes for failure messages.
func show(_ bytes: some Collection<UInt8>, limit: Int = 200) -> String {
    var out = "\""
    for (n, b) in bytes.enumerated() {
        if n == limit { out += "..."; break }
        switch b {
        case 0x0D: out += "\\r"
        case 0x0A: out += "\\n"
        case 0x09: out += "\\t"
        case 0x22: out += "\\\""
        case 0x5C: out += "\\\\"
        case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(b))
        default:
            let hex = String(b, radix: 16)
            out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
        }
    }
    return out + "\""
}

/// The first input byte. Bits 0-1: how the rest arrives (see `Arrivals`); bits 2-4: a
/// target-specific option; bits 5-7: part of the split seed.
struct Control {
    let byte: UInt8
    var splitMode: Int { Int(byte & 3) }
    var option: Int { Int((byte >> 2) & 7) }
}

/// One step of reading a connection, for requests and responses alike (`Facts`: what a
/// parsed head means to the harness).
enum ConnectionStep<Facts: Equatable>: Equatable {
    case head(HeadRead)
    case parsed(Facts)
    case parseError(WireError.Code)
    case body(BodyRead)
}

/// The head of `length` bytes at `feed`'s position, copied into an allocation of exactly
/// that size (AddressSanitizer then catches any read past it); the caller deallocates.
func copyHead(_ feed: Feed, length: Int) -> UnsafeMutableRawBufferPointer {
    let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 1)
    raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: feed.bytes[feed.pos..<(feed.pos + length)]))
    return raw
}

/// SplitMix64, as in the unit tests: the split of one input is always the same.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// A stream of bytes arriving from a peer, either all at once or in pieces, consumed from the
/// front as the gateway consumes its input buffer.
struct Feed {
    let bytes: UnsafeRawBufferPointer
    /// Bytes received so far (a prefix of `bytes`).
    private(set) var arrived: Int
    /// Bytes consumed (drained) so far.
    var pos = 0
    private var rng: SplitMix64
    /// 0: everything arrived at once; else the largest piece.
    private let maxPiece: Int

    /// Everything at once.
    init(all bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        arrived = bytes.count
        rng = SplitMix64(state: 0)
        maxPiece = 0
    }

    /// In pieces chosen by the control byte: 1 byte each (short inputs), 1-7, 1-64 or 1-600.
    init(split bytes: UnsafeRawBufferPointer, control: Control) {
        self.bytes = bytes
        rng = SplitMix64(state: UInt64(control.byte) &* 0x1_0000_0001 &+ UInt64(bytes.count))
        switch control.splitMode {
        case 0: maxPiece = bytes.count <= 1024 ? 1 : 7
        case 1: maxPiece = 7
        case 2: maxPiece = 64
        default: maxPiece = 600
        }
        arrived = 0
        _ = receive()
    }

    var available: Int { arrived - pos }
    var allArrived: Bool { arrived == bytes.count }

    /// The next piece arrives. False when the peer has nothing more (EOF).
    mutating func receive() -> Bool {
        guard arrived < bytes.count else { return false }
        let piece = maxPiece == 0 ? bytes.count : 1 + rng.below(maxPiece)
        arrived = min(bytes.count, arrived + piece)
        return true
    }

    /// Calls `body` with a copy of the first `min(available, max)` unconsumed bytes in an
    /// allocation of exactly that size, so AddressSanitizer catches any read past what the
    /// callee was shown.
    func withBuffered<R>(max: Int, _ body: (UnsafeRawBufferPointer) throws(WireError) -> R) throws(WireError) -> R {
        let n = Swift.min(available, max)
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: n, alignment: 1)
        defer { copy.deallocate() }
        if n > 0 { copy.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[pos..<(pos + n)])) }
        return try body(UnsafeRawBufferPointer(copy))
    }

    func slice(_ r: Range<Int>) -> [UInt8] { Array(bytes[r]) }
}

/// What reading one head produced.
enum HeadRead: Equatable {
    case head(length: Int)
    case scanError(WireError.Code)
    /// EOF with this many head bytes buffered.
    case incomplete(buffered: Int)
}

/// Finds the next head the way ClientConnection / readResponseHead do: the scanner is shown
/// all buffered bytes (at most `window`) each time more arrive.
func readHead(_ feed: inout Feed, kind: HeadKind, limits: WireLimits) -> HeadRead {
    var scanner = HeadScanner(kind: kind, limits: limits)
    while true {
        let window = scanner.window
        let result: Int?
        do {
            result = try feed.withBuffered(max: window) { buf throws(WireError) in try scanner.scan(buf) }
        } catch {
            return .scanError(error.code)
        }
        if let length = result {
            check(length > 0 && length <= feed.available && length <= limits.headerBytes,
                  "scanner returned \(length) with \(feed.available) buffered, limit \(limits.headerBytes)")
            check(scanner.isComplete, "scanner returned a length but is not complete")
            return .head(length: length)
        }
        check(!scanner.isComplete, "scanner complete without a length")
        if !feed.receive() { return .incomplete(buffered: feed.available) }
    }
}

/// One body as the gateway relays it: the payload, the wire bytes in order (framing and data
/// runs), and how it ended.
struct BodyRead: Equatable {
    var payload: [UInt8] = []
    /// Sizes of the `.data` events, in order (the chunks the gateway would re-frame).
    var dataEvents: [Int] = []
    /// The consumed wire bytes, each run tagged payload (true) or framing (false).
    var runs: [(isData: Bool, bytes: [UInt8])] = []
    var wireBytes = 0
    var complete = false
    var error: WireError.Code?

    static func == (a: BodyRead, b: BodyRead) -> Bool {
        // Event sizes depend on how bytes arrived; the outcome must not.
        a.payload == b.payload && a.wireBytes == b.wireBytes && a.complete == b.complete && a.error == b.error
    }
}

/// Runs `BodyDecoder` over the feed as `relayBody` does, with the event contract checked at each step.
func readBody(_ feed: inout Feed, framing: BodyFraming, maxTrailerBytes: Int = 8192) -> BodyRead {
    var decoder = BodyDecoder(framing: framing, maxTrailerBytes: maxTrailerBytes)
    var out = BodyRead()
    let startAvailable = feed.bytes.count - feed.pos
    var steps = 0
    while true {
        steps += 1
        check(steps < 1_000_000, "body decoder does not progress")
        let available = feed.available
        let inputCount = min(available, BodyDecoder.maxLineBytes)
        let event: BodyDecoder.Event
        do {
            event = try feed.withBuffered(max: BodyDecoder.maxLineBytes) { buf throws(WireError) in
                try decoder.next(buf, available: available)
            }
        } catch {
            out.error = error.code
            check(!decoder.isComplete, "decoder threw \(error) but is complete")
            break
        }
        switch event {
        case .data(let n):
            check(n > 0 && n <= available, ".data(\(n)) with \(available) available")
            let bytes = feed.slice(feed.pos..<(feed.pos + n))
            out.payload += bytes
            out.dataEvents.append(n)
            out.runs.append((true, bytes))
            feed.pos += n
        case .framing(let n):
            check(n > 0 && n <= inputCount, ".framing(\(n)) with \(inputCount) bytes shown")
            check(!decoder.isComplete, ".framing but complete")
            out.runs.append((false, feed.slice(feed.pos..<(feed.pos + n))))
            feed.pos += n
        case .end(let n):
            check(n >= 0 && n <= inputCount, ".end(\(n)) with \(inputCount) bytes shown")
            check(decoder.isComplete, ".end but not complete")
            if n > 0 { out.runs.append((false, feed.slice(feed.pos..<(feed.pos + n)))) }
            feed.pos += n
            out.complete = true
        case .needMore:
            check(!decoder.isComplete, ".needMore but complete")
            if feed.receive() { continue }
            do {
                try decoder.finishOnEOF()
                out.complete = true
            } catch {
                out.error = error.code
                check(error.code == .bodyTruncated, "finishOnEOF threw \(error)")
            }
        }
        if out.complete || out.error != nil { break }
    }
    out.wireBytes = out.runs.reduce(0) { $0 + $1.bytes.count }
    check(out.wireBytes <= startAvailable, "body consumed \(out.wireBytes) of \(startAvailable) bytes")
    check(out.payload.count <= out.wireBytes, "payload \(out.payload.count) > wire \(out.wireBytes)")
    check(decoder.payloadBytes == UInt64(out.payload.count),
          "payloadBytes \(decoder.payloadBytes) != delivered \(out.payload.count)")
    if out.complete {
        // Once complete the decoder stays complete and consumes nothing more.
        let again = try? feed.withBuffered(max: BodyDecoder.maxLineBytes) { buf throws(WireError) in
            try decoder.next(buf, available: feed.available)
        }
        check(again == .end(framing: 0), "complete decoder returned \(String(describing: again))")
    }
    checkBody(out, framing: framing)
    return out
}

/// Properties of one decoded body, whatever the message around it.
func checkBody(_ body: BodyRead, framing: BodyFraming) {
    switch framing {
    case .none:
        check(body.complete && body.wireBytes == 0 && body.error == nil, "no-body framing consumed bytes")
    case .length(let n):
        check(body.wireBytes == body.payload.count, "length body with framing bytes")
        if body.complete {
            check(UInt64(body.payload.count) == n, "Content-Length \(n) body delivered \(body.payload.count) bytes")
        } else {
            check(UInt64(body.payload.count) < n, "incomplete length body delivered \(body.payload.count) of \(n)")
            check(body.error == .bodyTruncated, "length body failed with \(String(describing: body.error))")
        }
    case .closeDelimited:
        check(body.complete && body.wireBytes == body.payload.count, "close-delimited body not whole")
    case .chunked:
        ChunkedGrammar.check(body)
        if body.complete { checkChunkedRoundTrip(body) }
    }
}

/// The payload re-framed the way `relayBody` does (one chunk per `.data` event) decodes back to
/// itself, consuming exactly the encoding.
func checkChunkedRoundTrip(_ body: BodyRead) {
    var wire: [UInt8] = []
    var offset = 0
    for n in body.dataEvents {
        wire += ChunkedEncoder.chunkHeader(size: n)
        wire += body.payload[offset..<(offset + n)]
        wire += ChunkedEncoder.chunkTrailer
        offset += n
    }
    wire += ChunkedEncoder.last
    wire += [0x47, 0x45, 0x54]   // pipelined bytes after the body must be left alone
    wire.withUnsafeBytes { buf in
        var feed = Feed(all: buf)
        var decoder = BodyDecoder(framing: .chunked)
        var payload: [UInt8] = []
        loop: while true {
            let available = feed.available
            let event: BodyDecoder.Event
            do {
                event = try feed.withBuffered(max: BodyDecoder.maxLineBytes) { b throws(WireError) in
                    try decoder.next(b, available: available)
                }
            } catch {
                fail("re-encoded chunked body rejected: \(error); wire \(show(wire))")
            }
            switch event {
            case .data(let n):
                payload += feed.slice(feed.pos..<(feed.pos + n))
                feed.pos += n
            case .framing(let n):
                feed.pos += n
            case .end(let n):
                feed.pos += n
                break loop
            case .needMore:
                fail("re-encoded chunked body incomplete: \(show(wire))")
            }
        }
        check(payload == body.payload, "re-encoded chunked body decoded to other bytes")
        check(feed.pos == wire.count - 3, "re-encoded chunked body consumed \(feed.pos) of \(wire.count - 3)")
    }
}

/// An independent check of what the chunked decoder consumed (RFC 9112 7.1): each chunk line is
/// 1-16 hex digits then nothing or extensions starting with BWS/";", its value equals the data
/// that follows, data is followed by exactly CRLF, trailer lines are "name:value" field lines.
enum ChunkedGrammar {
    static func check(_ body: BodyRead) {
        enum Expect { case sizeLine, data(UInt64), dataCRLF, trailer, done }
        var state = Expect.sizeLine
        for (isData, bytes) in body.runs {
            switch state {
            case .sizeLine:
                Fuzz.check(!isData, "chunk data where a chunk-size line was due")
                let size = sizeLine(bytes)
                state = size == 0 ? .trailer : .data(size)
            case .data(let remaining):
                Fuzz.check(isData, "framing inside chunk data: \(show(bytes))")
                Fuzz.check(UInt64(bytes.count) <= remaining, "chunk data longer than its size")
                state = UInt64(bytes.count) == remaining ? .dataCRLF : .data(remaining - UInt64(bytes.count))
            case .dataCRLF:
                Fuzz.check(!isData && bytes == [0x0D, 0x0A], "chunk data not followed by exactly CRLF: \(show(bytes))")
                state = .sizeLine
            case .trailer:
                Fuzz.check(!isData, "data in the trailer section")
                if bytes == [0x0D, 0x0A] {
                    state = .done
                } else {
                    trailerLine(bytes)
                }
            case .done:
                fail("bytes consumed after the end of a chunked body")
            }
        }
        if body.complete {
            if case .done = state {} else { fail("chunked body complete before its last CRLF") }
        }
    }

    private static func sizeLine(_ line: [UInt8]) -> UInt64 {
        Fuzz.check(line.count >= 3 && line.suffix(2) == [0x0D, 0x0A], "chunk line without CRLF: \(show(line))")
        let text = line.dropLast(2)
        Fuzz.check(!text.contains(0x0D) && !text.contains(0x0A), "CR/LF inside a chunk line: \(show(line))")
        let digits = text.prefix { Ref.hexValue($0) != nil }
        Fuzz.check((1...16).contains(digits.count), "chunk size of \(digits.count) hex digits: \(show(line))")
        var size: UInt64 = 0
        for d in digits { size = size << 4 | UInt64(Ref.hexValue(d)!) }
        let rest = text.dropFirst(digits.count)
        if let first = rest.first {
            Fuzz.check(first == 0x3B || first == 0x20 || first == 0x09, "junk after chunk size: \(show(line))")
            Fuzz.check(rest.contains(0x3B), "chunk extension without ';': \(show(line))")
            Fuzz.check(rest.allSatisfy(Ref.isFieldValueByte), "control byte in chunk extension: \(show(line))")
            Fuzz.check(rest.last != 0x20 && rest.last != 0x09, "trailing whitespace in chunk line: \(show(line))")
        }
        return size
    }

    private static func trailerLine(_ line: [UInt8]) {
        Fuzz.check(line.count >= 3 && line.suffix(2) == [0x0D, 0x0A], "trailer line without CRLF: \(show(line))")
        let text = Array(line.dropLast(2))
        let name = text.prefix { $0 != 0x3A }
        Fuzz.check(name.count < text.count, "trailer line without colon: \(show(line))")
        Fuzz.check(!name.isEmpty && name.allSatisfy(Ref.isTchar), "bad trailer field name: \(show(line))")
        Fuzz.check(text[(name.count + 1)...].allSatisfy(Ref.isFieldValueByte), "bad trailer field value: \(show(line))")
    }
}

/// `check` under a name the nested types above can reach despite their own `check`.
enum Fuzz {
    static func check(_ condition: Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
        if !condition { fail(message(), file: file, line: line) }
    }
}

/// Byte rules written out from the RFCs again, independently of ByteClass.
enum Ref {
    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }

    /// field-vchar (obs-text included), SP, HTAB.
    static func isFieldValueByte(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7F) }

    static func isOWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }

    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }

    static func lower(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        bytes.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
    }

    static func trim(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var s = bytes.startIndex, e = bytes.endIndex
        while s < e && isOWS(bytes[s]) { s += 1 }
        while e > s && isOWS(bytes[e - 1]) { e -= 1 }
        return Array(bytes[s..<e])
    }

    /// Comma-separated elements, OWS-trimmed, empty ones kept.
    static func elements(_ value: [UInt8]) -> [[UInt8]] {
        value.split(separator: 0x2C, omittingEmptySubsequences: false).map { trim($0) }
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// A host as Authority must leave it: lower-case reg-name of unreserved bytes, or a
    /// bracketed IPv6 literal of lower-case hex, ':' and '.'.
    static func isCleanHost(_ host: String) -> Bool {
        let b = Array(host.utf8)
        guard !b.isEmpty, b.count <= 255 else { return false }
        if b.first == 0x5B {
            guard b.count >= 4, b.last == 0x5D else { return false }
            return b.dropFirst().dropLast().allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0)
                || $0 == 0x3A || $0 == 0x2E }
        }
        return b.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || Array("-._~".utf8).contains($0) }
    }
}

/// The fields of a head as (name, value) byte arrays.
func fieldList(_ h: HTTPHeaders) -> [Field] {
    (0..<h.count).map { i in h.withFieldBytes(at: i) { n, v in Field(name: Array(n), value: Array(v)) } }
}

struct Field: Equatable, CustomStringConvertible {
    var name: [UInt8]
    var value: [UInt8]
    var lowerName: [UInt8] { Ref.lower(name) }
    func named(_ s: String) -> Bool { lowerName == Ref.bytes(s) }
    var description: String { show(name) + ": " + show(value) }
}

/// Every field is a valid field line as the parser must have left it: a token name, a value of
/// field-value bytes with no surrounding OWS; and the known-field tag matches the name.
func checkFields(_ h: HTTPHeaders) {
    for (i, f) in fieldList(h).enumerated() {
        check(!f.name.isEmpty && f.name.allSatisfy(Ref.isTchar), "bad field name \(f)")
        check(f.value.allSatisfy(Ref.isFieldValueByte), "bad field value \(f)")
        check(f.value.first.map { !Ref.isOWS($0) } ?? true && f.value.last.map { !Ref.isOWS($0) } ?? true,
              "untrimmed field value \(f)")
        check(h.known(at: i) == KnownField(name: String(decoding: f.name, as: UTF8.self)), "known tag of \(f)")
    }
}

/// What a field list declares about framing (RFC 9112 6.1-6.3), computed from the rules directly.
enum DeclaredFraming: Equatable {
    /// Conflicting, bad or unsupported framing fields: the head must be refused.
    case refused
    /// Neither Transfer-Encoding nor Content-Length.
    case nothing
    case framing(BodyFraming)
}

func referenceFraming(_ fields: [Field], version: HTTPVersion) -> DeclaredFraming {
    let te = fields.filter { $0.named("transfer-encoding") }
    let cl = fields.filter { $0.named("content-length") }
    if !te.isEmpty {
        guard cl.isEmpty, version == .http11 else { return .refused }
        let perField = te.map { Ref.elements($0.value).filter { !$0.isEmpty } }
        guard perField.allSatisfy({ !$0.isEmpty }) else { return .refused }
        let codings = perField.flatMap { $0 }
        guard codings.count == 1, Ref.lower(codings[0]) == Ref.bytes("chunked") else { return .refused }
        return .framing(.chunked)
    }
    if !cl.isEmpty {
        var agreed: UInt64?
        for f in cl {
            for e in Ref.elements(f.value) {
                guard (1...19).contains(e.count), e.allSatisfy({ (0x30...0x39).contains($0) }) else { return .refused }
                let n = e.reduce(UInt64(0)) { $0 * 10 + UInt64($1 - 0x30) }
                if let a = agreed, a != n { return .refused }
                agreed = n
            }
        }
        return .framing(.length(agreed!))
    }
    return .nothing
}

/// RFC 9112 9.3 persistence from the Connection field(s).
func referenceKeepAlive(_ fields: [Field], version: HTTPVersion) -> Bool {
    let options = fields.filter { $0.named("connection") }.flatMap { Ref.elements($0.value).map { Ref.lower($0) } }
    if options.contains(Ref.bytes("close")) { return false }
    return version == .http11 || options.contains(Ref.bytes("keep-alive"))
}

/// Parses `bytes` as one complete head with the scanner and parser, as the gateway does.
func reparse<H>(_ bytes: [UInt8], kind: HeadKind, limits: WireLimits,
                _ parse: (UnsafeRawBufferPointer) throws(WireError) -> H) -> Result<H, WireError> {
    bytes.withUnsafeBytes { buf in
        var feed = Feed(all: buf)
        switch readHead(&feed, kind: kind, limits: limits) {
        case .head(let length):
            check(length == bytes.count, "re-encoded head measured as \(length) of \(bytes.count): \(show(bytes))")
            do throws(WireError) {
                return .success(try feed.withBuffered(max: length) { b throws(WireError) in try parse(b) })
            } catch {
                return .failure(error)
            }
        case .scanError(let code):
            return .failure(WireError(code, "scanner"))
        case .incomplete:
            fail("re-encoded head incomplete: \(show(bytes))")
        }
    }
}

/// Limits that never bind, for re-parsing what the encoder wrote (it may be a little longer).
let looseLimits = WireLimits(requestLineBytes: 1 << 20, headerBytes: 1 << 22, headerCount: 1 << 20)

/// Small limits, so that short inputs reach the 414 / 431 paths.
let smallLimits = WireLimits(requestLineBytes: 48, headerBytes: 256, headerCount: 6)

/// `host [":" port]` split for checking: a bracketed literal runs to "]", a reg-name to ":".
func splitAuthority(_ b: [UInt8]) -> (host: [UInt8], port: Int?) {
    var hostEnd: Int
    if b.first == 0x5B, let close = b.firstIndex(of: 0x5D) {
        hostEnd = close + 1
    } else {
        hostEnd = b.firstIndex(of: 0x3A) ?? b.count
    }
    hostEnd = min(hostEnd, b.count)
    let host = Array(b[..<hostEnd])
    guard hostEnd < b.count, b[hostEnd] == 0x3A else { return (host, nil) }
    let digits = b[(hostEnd + 1)...]
    guard (1...5).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return (host, -1) }
    return (host, digits.reduce(0) { $0 * 10 + Int($1 - 0x30) })
}

/// The start line and the fields of a head, split on CRLF directly.
func headLines(_ raw: [UInt8], kind: HeadKind) -> (start: [UInt8], fields: [Field]) {
    var i = kind == .request && raw.starts(with: [0x0D, 0x0A]) ? 2 : 0
    func nextLine() -> [UInt8] {
        var j = i
        while j + 1 < raw.count && !(raw[j] == 0x0D && raw[j + 1] == 0x0A) { j += 1 }
        check(j + 1 < raw.count, "head line without CRLF")
        let line = Array(raw[i..<j])
        i = j + 2
        return line
    }
    let start = nextLine()
    var fields: [Field] = []
    while true {
        let line = nextLine()
        if line.isEmpty { break }
        guard let colon = line.firstIndex(of: 0x3A) else { fail("field line without colon: \(show(line))") }
        fields.append(Field(name: Array(line[..<colon]), value: Ref.trim(line[(colon + 1)...])))
    }
    check(i == raw.count, "bytes after the empty line")
    return (start, fields)
}
