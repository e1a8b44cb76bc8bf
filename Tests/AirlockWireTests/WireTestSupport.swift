import AirlockWire
import XCTest

/// Thrown by the helpers when the scanner wants more bytes than the test supplied.
struct IncompleteHead: Error {}

/// Scans `bytes` with `HeadScanner` (as the gateway does), then parses exactly the measured head.
/// Fails the test if bytes are left over: every test head is written out in full.
func request(
    bytes: [UInt8], limits: WireLimits = WireLimits(), file: StaticString = #filePath, line: UInt = #line
) throws -> RequestHead {
    try bytes.withUnsafeBytes { buf in
        var scanner = HeadScanner(kind: .request, limits: limits)
        guard let length = try scanner.scan(buf) else { throw IncompleteHead() }
        let head = try RequestParser.parse(UnsafeRawBufferPointer(rebasing: buf[..<length]), limits: limits)
        XCTAssertEqual(length, buf.count, "scanner measured a different head length", file: file, line: line)
        return head
    }
}

func request(
    _ text: String, limits: WireLimits = WireLimits(), file: StaticString = #filePath, line: UInt = #line
) throws -> RequestHead {
    try request(bytes: Array(text.utf8), limits: limits, file: file, line: line)
}

/// Parses with `RequestParser` alone, skipping the scanner, to prove the parser enforces a rule by itself.
func parseOnly(_ text: String, limits: WireLimits = WireLimits()) throws -> RequestHead {
    try Array(text.utf8).withUnsafeBytes { try RequestParser.parse($0, limits: limits) }
}

func response(bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> ResponseHead {
    try bytes.withUnsafeBytes { buf in
        var scanner = HeadScanner(kind: .response, limits: WireLimits())
        guard let length = try scanner.scan(buf) else { throw IncompleteHead() }
        let head = try ResponseParser.parse(UnsafeRawBufferPointer(rebasing: buf[..<length]))
        XCTAssertEqual(length, buf.count, "scanner measured a different head length", file: file, line: line)
        return head
    }
}

func response(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> ResponseHead {
    try response(bytes: Array(text.utf8), file: file, line: line)
}

/// Asserts that `expression` throws a `WireError` with exactly `code` (and `status`, if given).
func assertWireError<T>(
    _ expression: @autoclosure () throws -> T, _ code: WireError.Code, status: Int? = nil,
    _ message: String = "", file: StaticString = #filePath, line: UInt = #line
) {
    do {
        let value = try expression()
        XCTFail("expected \(code.rawValue), got \(value) \(message)", file: file, line: line)
    } catch let error as WireError {
        XCTAssertEqual(error.code, code, "\(error) \(message)", file: file, line: line)
        if let status {
            XCTAssertEqual(error.status, status, "\(error) \(message)", file: file, line: line)
        }
    } catch {
        XCTFail("expected WireError \(code.rawValue), got \(error) \(message)", file: file, line: line)
    }
}

/// A small deterministic generator (SplitMix64) so random splits repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Drives a `BodyDecoder` over `wire` as a connection would: bytes arrive in pieces of the
/// given sizes, are buffered, and the decoder is asked about the buffer until it needs more.
/// Returns the payload and how many wire bytes the body occupied.
func decodeBody(
    _ framing: BodyFraming, _ wire: [UInt8], arrivals: [Int], maxTrailerBytes: Int = 8192, eof: Bool = false
) throws -> (payload: [UInt8], consumed: Int, complete: Bool) {
    var decoder = BodyDecoder(framing: framing, maxTrailerBytes: maxTrailerBytes)
    var buffer: [UInt8] = []
    var payload: [UInt8] = []
    var consumed = 0
    var arrived = 0
    var pieces = arrivals[...]
    while true {
        let event = try buffer.withUnsafeBytes { buf in
            try decoder.next(UnsafeRawBufferPointer(rebasing: buf.prefix(BodyDecoder.maxLineBytes)), available: buf.count)
        }
        switch event {
        case .data(let n):
            XCTAssertGreaterThan(n, 0)
            payload.append(contentsOf: buffer[..<n])
            buffer.removeFirst(n)
            consumed += n
        case .framing(let n):
            XCTAssertGreaterThan(n, 0)
            buffer.removeFirst(n)
            consumed += n
        case .end(let n):
            buffer.removeFirst(n)
            consumed += n
            XCTAssertTrue(decoder.isComplete)
            XCTAssertEqual(decoder.payloadBytes, UInt64(payload.count))
            return (payload, consumed, true)
        case .needMore:
            guard arrived < wire.count else {
                if eof { try decoder.finishOnEOF() }
                return (payload, consumed, decoder.isComplete)
            }
            let size = min(max(pieces.popFirst() ?? wire.count, 1), wire.count - arrived)
            buffer.append(contentsOf: wire[arrived..<(arrived + size)])
            arrived += size
        }
    }
}

func decodeBody(_ framing: BodyFraming, _ wire: String, eof: Bool = false) throws -> (payload: [UInt8], consumed: Int, complete: Bool) {
    try decodeBody(framing, Array(wire.utf8), arrivals: [], eof: eof)
}
