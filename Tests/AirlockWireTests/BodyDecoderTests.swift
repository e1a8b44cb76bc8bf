import AirlockWire
import XCTest

/// Length, chunked and close-delimited bodies (RFC 9112 6.3, 7.1), fed in every kind of split.
final class BodyDecoderTests: XCTestCase {
    private let chunkedWire = "5;name=value;flag ; q = \"a \\\"b\\\"\"\r\nhello\r\n"
        + "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
        + "001\r\n!\r\n"
        + "0\r\nX-Checksum: abc\r\nX-Other:  v \r\n\r\n"
    private let chunkedPayload = Array("helloabcdefghijklmnopqrstuvwxyz!".utf8)

    func testChunkedWithExtensionsAndTrailers() throws {
        let wire = Array(chunkedWire.utf8)
        let result = try decodeBody(.chunked, wire + Array("GET /next".utf8), arrivals: [wire.count + 9])
        XCTAssertEqual(result.payload, chunkedPayload)
        XCTAssertEqual(result.consumed, wire.count, "pipelined bytes after the body are left alone")
        XCTAssertTrue(result.complete)
    }

    func testChunkedByteByByte() throws {
        let wire = Array(chunkedWire.utf8)
        let result = try decodeBody(.chunked, wire, arrivals: Array(repeating: 1, count: wire.count))
        XCTAssertEqual(result.payload, chunkedPayload)
        XCTAssertEqual(result.consumed, wire.count)
    }

    func testChunkedInRandomSplits() throws {
        var rng = SplitMix64(seed: 0xA1B2_C3D4)
        var payload: [UInt8] = []
        var wire: [UInt8] = []
        for _ in 0..<40 {
            let size = Int.random(in: 1...300, using: &rng)
            let chunk = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            payload += chunk
            wire += ChunkedEncoder.chunkHeader(size: size) + chunk + ChunkedEncoder.chunkTrailer
        }
        wire += ChunkedEncoder.last
        for _ in 0..<50 {
            let arrivals = (0..<wire.count).map { _ in Int.random(in: 1...64, using: &rng) }
            let result = try decodeBody(.chunked, wire, arrivals: arrivals)
            XCTAssertEqual(result.payload, payload)
            XCTAssertEqual(result.consumed, wire.count)
            XCTAssertTrue(result.complete)
        }
    }

    func testLengthBodyInRandomSplitsAndByteByByte() throws {
        var rng = SplitMix64(seed: 42)
        let payload = (0..<5000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let wire = payload + Array("HTTP/1.1 200 OK\r\n".utf8)
        for _ in 0..<20 {
            let arrivals = (0..<wire.count).map { _ in Int.random(in: 1...700, using: &rng) }
            let result = try decodeBody(.length(5000), wire, arrivals: arrivals)
            XCTAssertEqual(result.payload, payload)
            XCTAssertEqual(result.consumed, 5000)
        }
        let single = try decodeBody(.length(5000), wire, arrivals: Array(repeating: 1, count: wire.count))
        XCTAssertEqual(single.payload, payload)
    }

    func testLengthStateDoesNotReadTheBytes() throws {
        var decoder = BodyDecoder(framing: .length(10))
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        XCTAssertEqual(try decoder.next(empty, available: 4), .data(4))
        XCTAssertEqual(try decoder.next(empty, available: 100), .data(6))
        XCTAssertTrue(decoder.isComplete)
        XCTAssertEqual(try decoder.next(empty, available: 100), .end(framing: 0))
        XCTAssertEqual(decoder.payloadBytes, 10)
    }

    func testNoneAndZeroLengthAreCompleteAtOnce() throws {
        for framing in [BodyFraming.none, .length(0)] {
            var decoder = BodyDecoder(framing: framing)
            XCTAssertTrue(decoder.isComplete)
            XCTAssertEqual(try decoder.next(UnsafeRawBufferPointer(start: nil, count: 0), available: 0), .end(framing: 0))
            XCTAssertNoThrow(try decoder.finishOnEOF())
        }
    }

    func testCloseDelimitedEndsOnEOF() throws {
        let result = try decodeBody(.closeDelimited, Array("all of it".utf8), arrivals: [3, 3, 3], eof: true)
        XCTAssertEqual(result.payload, Array("all of it".utf8))
        XCTAssertTrue(result.complete)
    }

    func testTruncatedBodiesThrowOnEOF() {
        assertWireError(try decodeBody(.length(10), "short", eof: true), .bodyTruncated, status: 400)
        assertWireError(try decodeBody(.chunked, "5\r\nhel", eof: true), .bodyTruncated)
        assertWireError(try decodeBody(.chunked, "5\r\nhello\r\n", eof: true), .bodyTruncated)
        assertWireError(try decodeBody(.chunked, "0\r\n", eof: true), .bodyTruncated)
    }

    func testChunkSizePrefixesAreRejected() {
        for line in ["0x1", "+1", " 1", "-1", "\t1", ";a", ""] {
            assertWireError(try decodeBody(.chunked, "\(line)\r\nx\r\n0\r\n\r\n"), .badChunk, status: 400, "'\(line)'")
        }
    }

    func testChunkSizeSuffixesAreRejected() {
        for line in ["1 ", "1z", "1\t", "1 x", "1;", "1;=v", "1;a=", "1;a=\"open", "1;a=b c", "1;a;", "1;a=b ", "1;a b",
                     "1;a=\"x\"y", "1,2"] {
            assertWireError(try decodeBody(.chunked, "\(line)\r\nx\r\n0\r\n\r\n"), .badChunk, status: 400, "'\(line)'")
        }
    }

    func testChunkExtensionsWithBWSAreAccepted() throws {
        for line in ["1;a", "1 ;a", "1\t; a", "1;a=b", "1;a = b", "1;a=\"q\\\"s\"", "1;a;b=c ;d=\"\""] {
            XCTAssertEqual(try decodeBody(.chunked, "\(line)\r\nx\r\n0\r\n\r\n").payload, Array("x".utf8), line)
        }
    }

    func testBareCRAndLFInChunkLinesAreRejected() {
        assertWireError(try decodeBody(.chunked, "1\nx\r\n0\r\n\r\n"), .badChunk, status: 400)
        assertWireError(try decodeBody(.chunked, "1\rx\r\n0\r\n\r\n"), .badChunk, status: 400)
        assertWireError(try decodeBody(.chunked, "1\r\nx\r\n0\n\r\n"), .badChunk, status: 400)
    }

    func testChunkSizeOverflowIsRejected() throws {
        assertWireError(try decodeBody(.chunked, "10000000000000000\r\n"), .badChunk, status: 400)
        assertWireError(try decodeBody(.chunked, "00000000000000001\r\nx\r\n0\r\n\r\n"), .badChunk, status: 400)
        var decoder = BodyDecoder(framing: .chunked)
        let line = Array("ffffffffffffffff\r\n".utf8)
        XCTAssertEqual(try line.withUnsafeBytes { try decoder.next($0, available: $0.count) }, .framing(line.count))
        XCTAssertEqual(try decoder.next(UnsafeRawBufferPointer(start: nil, count: 0), available: 1 << 40), .data(1 << 40))
    }

    func testMissingCRLFAfterChunkDataIsRejected() {
        assertWireError(try decodeBody(.chunked, "3\r\nhello\r\n0\r\n\r\n"), .badChunk, status: 400)
        assertWireError(try decodeBody(.chunked, "3\r\nabc\n0\r\n\r\n"), .badChunk, status: 400)
        assertWireError(try decodeBody(.chunked, "3\r\nabc\rX0\r\n\r\n"), .badChunk, status: 400)
        assertWireError(try decodeBody(.chunked, Array("3\r\nabcd".utf8), arrivals: [1, 1, 1, 1, 1, 1, 1, 1]), .badChunk)
    }

    func testChunkLineLongerThanMaxLineBytesIsRejected() {
        let longExtension = "1;" + String(repeating: "a", count: BodyDecoder.maxLineBytes) + "\r\nx\r\n0\r\n\r\n"
        assertWireError(try decodeBody(.chunked, longExtension), .badChunk, status: 400)
    }

    func testTrailerFieldsAreValidatedLikeHeaders() {
        let bad = ["X-T : 1", " folded", "X-T", ": v", "X(T): v", "X-T: a\u{0}b", "X-T: a\u{7F}"]
        for line in bad {
            assertWireError(try decodeBody(.chunked, "1\r\nx\r\n0\r\n\(line)\r\n\r\n"), .badTrailer, status: 400, "'\(line)'")
        }
        assertWireError(try decodeBody(.chunked, "0\r\nX-T: 1\nY: 2\r\n\r\n"), .badTrailer)
        assertWireError(try decodeBody(.chunked, "0\r\nX-T: 1\rY: 2\r\n\r\n"), .badTrailer)
    }

    func testTrailerSectionLargerThanTheLimitIsRejected() throws {
        let trailers = (0..<10).map { "X-T\($0): 0123456789\r\n" }.joined()
        let wire = Array("0\r\n\(trailers)\r\n".utf8)
        XCTAssertTrue(try decodeBody(.chunked, wire, arrivals: [], maxTrailerBytes: 1000).complete)
        assertWireError(try decodeBody(.chunked, wire, arrivals: [], maxTrailerBytes: 100), .badTrailer, status: 400)
        let endless = Array("0\r\nX-T: ".utf8) + Array(repeating: UInt8(ascii: "v"), count: 300)
        assertWireError(try decodeBody(.chunked, endless, arrivals: [], maxTrailerBytes: 100), .badTrailer)
    }

    /// Found by fuzz/chunked: a trailer section exactly at the limit was refused when the CR of
    /// the final empty line arrived on its own (the lone CR counted against the limit, though
    /// the empty line never counts), and accepted when CR and LF arrived together.
    func testTrailerSectionAtTheLimitIsAcceptedInEverySplit() throws {
        // Trailer field lines of 19 + 8 + 18 + 19 = 64 bytes, CRLFs included.
        let wire = Array("0\r\nX-T0: 01234561229\r\nX-:3:9\r\nX-T1: 0123456789\r\nX-^T4: 0123456789\r\n\r\n".utf8)
        let splits: [[Int]] = [[], Array(repeating: 1, count: wire.count), [wire.count - 1, 1]]
        for arrivals in splits {
            let result = try decodeBody(.chunked, wire, arrivals: arrivals, maxTrailerBytes: 64)
            XCTAssertTrue(result.complete, "arrivals \(arrivals)")
            XCTAssertEqual(result.consumed, wire.count)
            assertWireError(try decodeBody(.chunked, wire, arrivals: arrivals, maxTrailerBytes: 63), .badTrailer)
        }
    }

    func testEventsForASimpleChunkedBody() throws {
        var decoder = BodyDecoder(framing: .chunked)
        var events: [BodyDecoder.Event] = []
        var wire = Array("4\r\nwiki\r\n0\r\n\r\n".utf8)[...]
        while !decoder.isComplete {
            let event = try Array(wire).withUnsafeBytes { try decoder.next($0, available: $0.count) }
            events.append(event)
            switch event {
            case .data(let n), .framing(let n), .end(let n): wire = wire.dropFirst(n)
            case .needMore: XCTFail("all bytes were given")
            }
        }
        XCTAssertEqual(events, [.framing(3), .data(4), .framing(2), .framing(3), .end(framing: 2)])
        XCTAssertTrue(wire.isEmpty)
    }

    // MARK: precheck (bytes buffered with the head, before any upstream connection)

    private func precheck(_ text: String) -> String? {
        let d = BodyDecoder(framing: .chunked)
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { buf -> String? in
            do throws(WireError) {
                try d.precheck(buf)
                return nil
            } catch {
                return error.reason
            }
        }
    }

    func testPrecheckPassesWholeAndPartialBodiesAndStopsAtTheEnd() {
        XCTAssertNil(precheck("5\r\nhello\r\n0\r\n\r\n"))
        XCTAssertNil(precheck("5\r\nhel"), "cut short: more may come")
        XCTAssertNil(precheck("5\r\nhello\r\n0\r\n\r\nGARBAGE that is the next request"),
                     "bytes after the body are not the body's")
        XCTAssertNil(precheck(""))
    }

    func testPrecheckFindsWhatTheRelayWouldFind() {
        for text in ["zz\r\n", "fffffffffffffffffffff\r\n", "5\nhello\r\n", "5\r\nhelloXX\r\n", "5\r\nhello\r\n-1\r\n"] {
            // The same bytes through the relay's own loop must fail with the same reason.
            var relay = BodyDecoder(framing: .chunked)
            let bytes = Array(text.utf8)
            var relayReason: String?
            bytes.withUnsafeBytes { buf in
                var offset = 0
                do throws(WireError) {
                    while offset < buf.count {
                        let rest = UnsafeRawBufferPointer(rebasing: buf[offset...])
                        switch try relay.next(rest, available: rest.count) {
                        case .data(let n), .framing(let n): offset += n
                        case .end, .needMore: return
                        }
                    }
                } catch {
                    relayReason = error.reason
                }
            }
            XCTAssertNotNil(relayReason, text)
            XCTAssertEqual(precheck(text), relayReason, text)
        }
        // precheck never moves the decoder it is called on
        let d = BodyDecoder(framing: .chunked)
        Array("5\r\nhello\r\n0\r\n\r\n".utf8).withUnsafeBytes { buf in _ = try? d.precheck(buf) }
        XCTAssertFalse(d.isComplete)
        XCTAssertEqual(d.payloadBytes, 0)
    }
}
