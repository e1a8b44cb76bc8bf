import AirlockSerialization
import XCTest

/// `MultipartBoundary` and `MultipartValidator`: every body is fed whole, split in two at every
/// byte position, and one byte at a time, and must give the same verdict each way.
final class MultipartValidatorTests: XCTestCase {
    private static let contentType = "multipart/form-data; boundary=XyZ-b0undary"
    private static let b = "XyZ-b0undary"

    // MARK: - Boundary

    func testBoundaryFromTokenQuotedAndAnyCase() throws {
        XCTAssertEqual(try MultipartBoundary(contentType: Self.contentType).description, Self.b)
        XCTAssertEqual(try MultipartBoundary(contentType: "Multipart/Form-Data;BOUNDARY=abc").description, "abc")
        XCTAssertEqual(
            try MultipartBoundary(contentType: " multipart/form-data ; charset=utf-8; boundary=\"a b:c?=()'\" ; x=\"y;z\"")
                .description,
            "a b:c?=()'")
        let seventy = String(repeating: "7", count: 70)
        XCTAssertEqual(try MultipartBoundary(contentType: "multipart/form-data; boundary=\(seventy)").bytes.count, 70)
    }

    func testBoundaryErrors() {
        assertBoundaryError("multipart/form-data", "multipart-no-boundary")
        assertBoundaryError("multipart/form-data; charset=utf-8", "multipart-no-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"\"", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\(String(repeating: "7", count: 71))", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"ab \"", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"a@b\"", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=a@b", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=a; boundary=a", "multipart-bad-boundary")
        assertBoundaryError("multipart/form-data; boundary=\"abc", "multipart-bad-boundary")
        assertBoundaryError("multipart/mixed; boundary=abc", "multipart-not-form-data")
        assertBoundaryError("text/plain", "multipart-not-form-data")
    }

    func testIsFormData() {
        XCTAssertTrue(MultipartBoundary.isFormData(contentType: "multipart/form-data"))
        XCTAssertTrue(MultipartBoundary.isFormData(contentType: "MULTIPART/form-DATA ; boundary=x"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "multipart/form-datax"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "multipart/form-data@x"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "multipart/mixed; boundary=x"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: "application/x-www-form-urlencoded"))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: ""))
        XCTAssertFalse(MultipartBoundary.isFormData(contentType: nil))
    }

    // MARK: - Valid bodies

    func testOnePart() {
        assertComplete(Self.field("a", "hello") + close)
    }

    func testSeveralPartsWithOtherHeaders() {
        assertComplete(
            Self.field("a", "1") + Self.field("b", "two words", headers: ["Content-Type: text/plain; charset=utf-8"])
                + bytes("--\(Self.b)\r\nCONTENT-DISPOSITION:FORM-DATA;NAME=c; filename=\"c.txt\"\r\n\r\nthree\r\n")
                + close)
    }

    func testEmptyPartContent() {
        assertComplete(Self.field("empty", "") + Self.field("also", "") + close)
    }

    func testPreambleAndEpilogue() {
        assertComplete(
            bytes("This is the preamble.\r\nIt may hold -- and --\(Self.b)x without a CRLF.\r\n")
                + Self.field("a", "1") + close + bytes("\r\nepilogue, even bare\nLF and --\(Self.b)--\r\n"))
    }

    func testTransportPadding() {
        assertComplete(
            bytes("--\(Self.b) \t \r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--\(Self.b)\t\r\n")
                + bytes("Content-Disposition: form-data; name=b\r\n\r\n2\r\n--\(Self.b)--"))
    }

    func testQuotedBoundaryWithSpaces() {
        let type = "multipart/form-data; boundary=\"a b:c?\""
        assertComplete(
            bytes("--a b:c?\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nvalue\r\n--a b:c?--\r\n"), contentType: type)
    }

    func testBoundaryInsideContentWithoutCRLF() {
        assertComplete(
            Self.field("a", "x--\(Self.b)y\n--\(Self.b)\r--\(Self.b)--\r\n-\r\n--XyZ-b0undar\r\n--")
                + close)
    }

    func testBinaryFilePart() {
        var content = (0...255).map { UInt8($0) }
        content += bytes("\r\n\r\r\n-\r\n--\r\n--XyZ\r\n--XyZ-b0undar\n--\(Self.b)\r") + [0, 0x0D, 0x0A]
        let part = bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.bin\"\r\n")
            + bytes("Content-Type: application/octet-stream\r\n\r\n") + content + bytes("\r\n")
        assertComplete(part + Self.field("after", "1") + close)
    }

    func testZeroPartsAsBrowsersSendAnEmptyForm() {
        assertComplete(close + bytes("\r\n"))
    }

    // MARK: - Invalid bodies

    func testMissingCloseDelimiterIsTruncated() {
        assertInvalid(Self.field("a", "hello"), "multipart-truncated")
        assertInvalid(Self.field("a", "hello") + bytes("--\(Self.b)-"), "multipart-truncated")
        assertInvalid(bytes("only a preamble\r\n"), "multipart-truncated")
        assertInvalid(bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\r\n"), "multipart-truncated")
        assertInvalid([], "multipart-truncated")
    }

    func testGarbageAfterDashBoundary() {
        assertInvalid(bytes("--\(Self.b)x\r\n") + Self.field("a", "1") + close, "multipart-bad-delimiter")
        assertInvalid(Self.field("a", "1") + bytes("--\(Self.b)-x"), "multipart-bad-delimiter")
        assertInvalid(Self.field("a", "1\r\n--\(Self.b)junk") + close, "multipart-bad-delimiter")
        assertInvalid(bytes("--\(Self.b) x\r\n"), "multipart-bad-delimiter")
    }

    func testHeaderLineWithoutColon() {
        assertInvalid(
            bytes("--\(Self.b)\r\nContent-Disposition form-data; name=a\r\n\r\n1\r\n") + close, "multipart-bad-header")
        assertInvalid(
            bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\r\nX-Note\r\n\r\n1\r\n") + close,
            "multipart-bad-header")
    }

    func testBadHeaderNamesAndValues() {
        let disposition = "Content-Disposition: form-data; name=a\r\n"
        for line in ["Bad Name: x\r\n", ": x\r\n", " folded\r\n", "X-Nul: a\u{0}b\r\n"] {
            assertInvalid(bytes("--\(Self.b)\r\n\(disposition)\(line)\r\n1\r\n") + close, "multipart-bad-header")
        }
    }

    func testMissingContentDisposition() {
        assertInvalid(bytes("--\(Self.b)\r\nContent-Type: text/plain\r\n\r\n1\r\n") + close, "multipart-no-disposition")
        assertInvalid(bytes("--\(Self.b)\r\n\r\n1\r\n") + close, "multipart-no-disposition")
        assertInvalid(
            Self.field("a", "1") + bytes("--\(Self.b)\r\nContent-Dispositions: form-data; name=b\r\n\r\n2\r\n") + close,
            "multipart-no-disposition")
    }

    func testContentDispositionNotFormDataWithName() {
        for value in ["attachment; name=a", "form-data", "form-data; filename=a.txt", "form-data; name=\"a",
                      "form-data; name=a; name=b", "form-data name=a"] {
            assertInvalid(
                bytes("--\(Self.b)\r\nContent-Disposition: \(value)\r\n\r\n1\r\n") + close, "multipart-bad-disposition")
        }
        assertInvalid(
            bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\r\ncontent-disposition: form-data; name=b\r\n\r\n1\r\n")
                + close, "multipart-bad-disposition")
    }

    func testLFOnlyLineEndings() {
        assertInvalid(
            bytes("--\(Self.b)\nContent-Disposition: form-data; name=a\n\n1\n--\(Self.b)--\n"), "multipart-bad-line-ending")
        assertInvalid(
            bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\n\n1\r\n") + close, "multipart-bad-line-ending")
        assertInvalid(
            bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\r\n\n1\r\n") + close, "multipart-bad-line-ending")
        assertInvalid(
            bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\r\nX-A: b\nX-C: d\r\n\r\n1\r\n") + close,
            "multipart-bad-line-ending")
        assertInvalid(bytes("--\(Self.b)\rContent-Disposition: form-data; name=a\r\n\r\n1\r\n") + close,
                      "multipart-bad-line-ending")
    }

    func testTooManyParts() {
        let limits = MultipartValidator.Limits(maxParts: 2)
        assertComplete(Self.field("a", "1") + Self.field("b", "2") + close, limits: limits)
        assertInvalid(Self.field("a", "1") + Self.field("b", "2") + Self.field("c", "3") + close,
                      "multipart-too-many-parts", limits: limits)
    }

    func testOversizedHeaders() {
        // `Content-Disposition: form-data; name="a"` CRLF is 42 bytes, the empty line 2 more.
        let limits = MultipartValidator.Limits(maxHeaderBytes: 44)
        assertComplete(Self.field("a", "1") + close, limits: limits)
        assertInvalid(Self.field("ab", "1") + close, "multipart-headers-too-large", limits: limits)
        assertInvalid(
            Self.field("a", "1", headers: ["X-Long: " + String(repeating: "x", count: 20)]) + close,
            "multipart-headers-too-large", limits: limits)
    }

    func testOversizedHeadersAtTheDefaultLimit() throws {
        // Fed whole and in 100-byte chunks only: every split of 8 KiB is slow in a debug build.
        let long = Self.field("a", "1", headers: ["X-Long: " + String(repeating: "x", count: 8_200)]) + close
        let fits = Self.field("a", "1", headers: ["X-Long: " + String(repeating: "x", count: 8_000)]) + close
        for chunks in [[long.count], Array(repeating: 100, count: long.count / 100) + [long.count % 100]] {
            let run = MultipartFeeding.relay(long, chunks, contentType: Self.contentType, limits: .init())
            guard case .invalid(let error) = run.verdict else { return XCTFail("expected invalid, got \(run.verdict)") }
            XCTAssertEqual(error.reason, "multipart-headers-too-large")
        }
        XCTAssertEqual(MultipartFeeding.relay(fits, [fits.count], contentType: Self.contentType, limits: .init()).verdict, .complete)
    }

    func testMessagesSayWhere() throws {
        let body = bytes("--\(Self.b)x")
        var validator = MultipartValidator(boundary: try MultipartBoundary(contentType: Self.contentType))
        let verdict = body.withUnsafeBytes { validator.feed($0) }
        guard case .invalid(let error) = verdict else { return XCTFail("expected invalid, got \(verdict)") }
        XCTAssertEqual(error.reason, "multipart-bad-delimiter")
        XCTAssertTrue(error.message.contains("byte 14"), error.message)
    }

    func testVerdictIsSticky() throws {
        var validator = MultipartValidator(boundary: try MultipartBoundary(contentType: Self.contentType))
        XCTAssertEqual((close + bytes("\u{0}\n garbage")).withUnsafeBytes { validator.feed($0) }, .complete)
        XCTAssertEqual(bytes("\n").withUnsafeBytes { validator.feed($0) }, .complete)
        XCTAssertEqual(validator.finish(), .complete)
        var broken = MultipartValidator(boundary: try MultipartBoundary(contentType: Self.contentType))
        guard case .invalid(let error) = bytes("--\(Self.b)x").withUnsafeBytes({ broken.feed($0) }) else {
            return XCTFail("expected invalid")
        }
        XCTAssertEqual(close.withUnsafeBytes { broken.feed($0) }, .invalid(error))
        XCTAssertEqual(broken.finish(), .invalid(error))
    }

    // MARK: - Holdback

    /// The relay forwards `forwardable` bytes while the verdict is `.needMore`: never a byte of the
    /// close delimiter `CRLF--boundary--`, at most boundary + 5 bytes held, never taking back.
    func testHoldbackKeepsTheCloseDelimiterUntilComplete() {
        let bodies: [[UInt8]] = [
            Self.field("a", "hello") + close,
            Self.field("a", "1\r") + Self.field("b", "") + close + bytes("\r\nepilogue"),
            bytes("preamble\r\n") + Self.field("a", "x--\(Self.b)\r\n--XyZ-b0undar\r") + close + bytes("--\r\n"),
            bytes("--\(Self.b) \t\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n--\(Self.b)--\r\n"),
            close,
        ]
        for body in bodies {
            let closeStart = Self.closeDelimiterStart(body)
            for chunks in MultipartFeeding.all(body.count) {
                let run = MultipartFeeding.relay(body, chunks, contentType: Self.contentType, limits: .init())
                guard run.verdict == .complete, run.forwardedBeforeComplete <= closeStart, run.forwarded == body.count,
                    run.maxHoldback <= Self.b.utf8.count + 5, !run.forwardableDecreased
                else {
                    XCTFail("chunks \(chunks) of \(body.count), close at \(closeStart): \(run)")
                    break
                }
            }
        }
    }

    /// A body that ends without its close delimiter never reaches the upstream whole, so that the
    /// relay can abort it at `finish()`.
    func testHoldbackKeepsATruncatedBodyShortOfItsEnd() {
        let bodies = [
            Self.field("a", "hello"), Self.field("a", "1") + bytes("--\(Self.b)-"),
            Self.field("a", "1") + bytes("--\(Self.b)"), Self.field("a", "1") + bytes("--\(Self.b) \r"),
            bytes("preamble"), bytes("--\(Self.b)\r\nContent-Disposition: form-data; name=a\r\n"),
        ]
        for body in bodies {
            for chunks in MultipartFeeding.all(body.count) {
                let run = MultipartFeeding.relay(body, chunks, contentType: Self.contentType, limits: .init())
                guard case .invalid(let error) = run.verdict, error.reason == "multipart-truncated",
                    run.forwarded < body.count, !run.forwardableDecreased
                else {
                    XCTFail("chunks \(chunks) of \(body.count): \(run)")
                    break
                }
            }
        }
    }

    /// Where `CRLF--boundary--` starts (0 when the body starts with `--boundary--`).
    private static func closeDelimiterStart(_ body: [UInt8]) -> Int {
        let close = bytes("\r\n--\(b)--")
        if body.starts(with: close.dropFirst(2)) { return 0 }
        return (0...(body.count - close.count)).first { body[$0..<$0 + close.count].elementsEqual(close) }!
    }

    // MARK: - Support

    private var close: [UInt8] { bytes("--\(Self.b)--") }

    /// `--b CRLF Content-Disposition: form-data; name="name" CRLF [headers CRLF] CRLF content CRLF`.
    private static func field(_ name: String, _ content: String, headers: [String] = []) -> [UInt8] {
        let extra = headers.map { $0 + "\r\n" }.joined()
        return bytes("--\(b)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\(extra)\r\n\(content)\r\n")
    }

    private func assertBoundaryError(_ contentType: String, _ reason: String, line: UInt = #line) {
        do {
            let boundary = try MultipartBoundary(contentType: contentType)
            XCTFail("\(contentType): expected \(reason), got boundary \(boundary)", line: line)
        } catch {
            XCTAssertEqual(error.reason, reason, "\(contentType): \(error.message)", line: line)
        }
    }

    private func assertComplete(
        _ body: [UInt8], contentType: String = contentType, limits: MultipartValidator.Limits = .init(),
        line: UInt = #line
    ) {
        for chunks in MultipartFeeding.all(body.count) {
            let run = MultipartFeeding.relay(body, chunks, contentType: contentType, limits: limits)
            guard run.verdict == .complete else {
                return XCTFail("chunks \(chunks): expected complete, got \(run.verdict)", line: line)
            }
        }
    }

    private func assertInvalid(
        _ body: [UInt8], _ reason: String, limits: MultipartValidator.Limits = .init(), line: UInt = #line
    ) {
        for chunks in MultipartFeeding.all(body.count) {
            let run = MultipartFeeding.relay(body, chunks, contentType: Self.contentType, limits: limits)
            guard case .invalid(let error) = run.verdict, error.reason == reason else {
                return XCTFail("chunks \(chunks): expected \(reason), got \(run.verdict)", line: line)
            }
        }
    }
}

/// Feeds a body as the relay would: chunk by chunk, forwarding what `forwardable` allows.
enum MultipartFeeding {
    struct Run {
        var verdict: MultipartValidator.Verdict
        /// The most bytes forwarded while the verdict was `.needMore`.
        var forwardedBeforeComplete = 0
        /// Bytes forwarded in all (everything for a complete body).
        var forwarded = 0
        /// Whether `forwardable` ever went down while the verdict was not invalid.
        var forwardableDecreased = false
        /// The largest `holdback` seen while the verdict was `.needMore`.
        var maxHoldback = 0
    }

    /// Chunk sizes: whole, split in two at every position (1..<count), one byte at a time.
    static func all(_ count: Int) -> [[Int]] {
        var result = [[count]]
        for k in stride(from: 1, to: count, by: 1) { result.append([k, count - k]) }
        if count > 1 { result.append(Array(repeating: 1, count: count)) }
        return result
    }

    static func relay(
        _ body: [UInt8], _ chunks: [Int], contentType: String, limits: MultipartValidator.Limits
    ) -> Run {
        guard let boundary = try? MultipartBoundary(contentType: contentType) else {
            preconditionFailure("bad test content type \(contentType)")
        }
        var validator = MultipartValidator(boundary: boundary, limits: limits)
        var run = Run(verdict: .needMore)
        var offset = 0
        for size in chunks {
            run.verdict = body[offset..<offset + size].withUnsafeBytes { validator.feed($0) }
            offset += size
            if !forward(&run, validator) { return run }
        }
        run.verdict = validator.finish()
        _ = forward(&run, validator)
        return run
    }

    /// Forwards what the validator allows; false once the relay must stop (invalid).
    private static func forward(_ run: inout Run, _ validator: MultipartValidator) -> Bool {
        if case .invalid = run.verdict { return false }
        if validator.forwardable < run.forwarded { run.forwardableDecreased = true }
        run.forwarded = max(run.forwarded, validator.forwardable)
        if run.verdict == .needMore {
            run.forwardedBeforeComplete = run.forwarded
            run.maxHoldback = max(run.maxHoldback, validator.holdback)
        }
        return true
    }
}
