import AirlockSession
import AirlockWire
import XCTest

/// `SplicePolicy`: the one decision whether a body's payload is spliced or copied, socket-free.
final class SplicePolicyTests: XCTestCase {
    private func facts(enabled: Bool = true, plain: Bool = true, buffered: Int = 0, validating: Bool = false,
                       sampling: Bool = false, teeing: Bool = false, inFraming: BodyFraming = .length(1000),
                       out: OutFraming = .length) -> SplicePolicy.Facts {
        SplicePolicy.Facts(enabled: enabled, plainBothSides: plain, inputBuffered: buffered, validating: validating,
                           sampling: sampling, teeing: teeing, inFraming: inFraming, out: out)
    }

    func testAContentLengthBodyNothingReadsIsSplicedForItsRest() {
        var d = BodyDecoder(framing: .length(1000))
        XCTAssertEqual(SplicePolicy.decide(facts(), decoder: d), .splice(budget: 1000))
        SplicePolicy.consumed(400, by: &d)
        XCTAssertEqual(SplicePolicy.decide(facts(), decoder: d), .splice(budget: 600))
        SplicePolicy.consumed(600, by: &d)
        XCTAssertTrue(d.isComplete)
        XCTAssertEqual(d.payloadBytes, 1000)
        XCTAssertEqual(SplicePolicy.decide(facts(), decoder: d), .copy(.framing))
    }

    func testEachRefusalHasItsReason() {
        let d = BodyDecoder(framing: .length(1000))
        XCTAssertEqual(SplicePolicy.decide(facts(enabled: false), decoder: d), .copy(.disabled))
        XCTAssertEqual(SplicePolicy.decide(facts(plain: false), decoder: d), .copy(.tls))
        XCTAssertEqual(SplicePolicy.decide(facts(validating: true), decoder: d), .copy(.validator))
        XCTAssertEqual(SplicePolicy.decide(facts(sampling: true), decoder: d), .copy(.sample))
        XCTAssertEqual(SplicePolicy.decide(facts(teeing: true), decoder: d), .copy(.cacheTee))
        XCTAssertEqual(SplicePolicy.decide(facts(buffered: 1), decoder: d), .copy(.inputBuffered))
    }

    func testChunkedIsSplicedChunkByChunkAndItsLinesAreRead() throws {
        var d = BodyDecoder(framing: .chunked)
        let f = facts(inFraming: .chunked, out: .chunked)
        XCTAssertEqual(SplicePolicy.decide(f, decoder: d), .copy(.framing), "the size line comes first")
        let line = Array("1f4\r\n".utf8)
        let event = try line.withUnsafeBytes { try d.next($0, available: line.count) }
        XCTAssertEqual(event, .framing(5))
        XCTAssertEqual(SplicePolicy.decide(f, decoder: d), .splice(budget: 500))
        SplicePolicy.consumed(500, by: &d)
        XCTAssertEqual(SplicePolicy.decide(f, decoder: d), .copy(.framing), "the chunk's CRLF is read")
        XCTAssertEqual(SplicePolicy.decide(facts(inFraming: .chunked, out: .close), decoder: d), .copy(.framing))
    }

    func testCloseDelimitedIsUnboundedButNotRechunked() {
        let d = BodyDecoder(framing: .closeDelimited)
        XCTAssertEqual(SplicePolicy.decide(facts(inFraming: .closeDelimited, out: .close), decoder: d), .splice(budget: .max))
        XCTAssertEqual(SplicePolicy.decide(facts(inFraming: .closeDelimited, out: .chunked), decoder: d), .copy(.reframing))
        XCTAssertEqual(SplicePolicy.decide(facts(inFraming: .length(10), out: .chunked), decoder: d), .copy(.reframing))
    }

    func testNoBodyIsNeverSpliced() {
        XCTAssertEqual(SplicePolicy.decide(facts(inFraming: .none, out: .none), decoder: BodyDecoder(framing: .none)),
                       .copy(.reframing))
        XCTAssertEqual(SplicePolicy.decide(facts(), decoder: BodyDecoder(framing: .length(0))), .copy(.framing))
    }
}
