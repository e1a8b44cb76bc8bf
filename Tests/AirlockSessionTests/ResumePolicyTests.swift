import AirlockSession
import AirlockWire
import XCTest

/// Transparent resume's decisions with no sockets (issue #21): which responses may be resumed
/// after a cut (RFC 9110 8.8 validators), the resumed request's `Range` and `If-Range`
/// (13.1.5, 14.2), and which resumed responses continue the client's body (14.4, 15.3.7).
final class ResumePolicyTests: XCTestCase {
    private let policy = ResumePolicy()
    private let get = requestHead("GET /big.bin HTTP/1.1", "Host: origin.test")
    private let date = "Date: Thu, 26 Nov 2026 10:00:00 GMT"

    private func plan(_ response: ResponseHead, file: StaticString = #filePath, line: UInt = #line) -> ResumePlan? {
        plan(get, response, file: file, line: line)
    }

    private func refusal(_ response: ResponseHead, policy: ResumePolicy? = nil) -> ResumeRefusal? {
        refusal(get, response, policy: policy)
    }

    private func plan(_ request: RequestHead?, _ response: ResponseHead,
                      file: StaticString = #filePath, line: UInt = #line) -> ResumePlan? {
        guard case .resumable(let plan) = policy.plan(request: request ?? get, response: response) else {
            XCTFail("expected resumable, got \(policy.plan(request: request ?? get, response: response))", file: file, line: line)
            return nil
        }
        return plan
    }

    private func refusal(_ request: RequestHead?, _ response: ResponseHead, policy: ResumePolicy? = nil) -> ResumeRefusal? {
        if case .refused(let why) = (policy ?? self.policy).plan(request: request ?? get, response: response) { return why }
        return nil
    }

    // MARK: eligibility

    func testStrongETagOn200IsResumableFromZeroToTheEnd() throws {
        let p = try XCTUnwrap(plan(responseHead("HTTP/1.1 200 OK", "Content-Length: 5000", "ETag: \"v1\"")))
        XCTAssertEqual(p.validator, ResumePlan.Validator.etag(try XCTUnwrap(EntityTag(parsing: "\"v1\""))))
        XCTAssertEqual(p.start, 0)
        XCTAssertEqual(p.end, 5000)
        XCTAssertEqual(p.completeLength, 5000)
        XCTAssertEqual(p.fields(relayed: 1234), ResumeFields(range: "bytes=1234-", ifRange: "\"v1\""))
    }

    func testChunked200IsResumableWithAnOpenRange() throws {
        let p = try XCTUnwrap(plan(responseHead("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "ETag: \"c\"")))
        XCTAssertNil(p.end)
        XCTAssertNil(p.completeLength)
        XCTAssertEqual(p.fields(relayed: 7), ResumeFields(range: "bytes=7-", ifRange: "\"c\""))
    }

    /// RFC 9110 8.8.2.2: Last-Modified is strong only when at least 60 s before Date; If-Range
    /// then carries the date exactly as the origin wrote it.
    func testLastModifiedSixtySecondsBeforeDateIsAStrongValidator() throws {
        let lm = "Thu, 26 Nov 2026 09:59:00 GMT"
        let p = try XCTUnwrap(plan(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", date, "Last-Modified: \(lm)")))
        XCTAssertEqual(p.fields(relayed: 4), ResumeFields(range: "bytes=4-", ifRange: lm))
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", date,
                                            "Last-Modified: Thu, 26 Nov 2026 09:59:01 GMT")), .recentLastModified)
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "Last-Modified: \(lm)")),
                       .recentLastModified, "no Date: the date cannot be shown strong")
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", date, "Last-Modified: yesterday")),
                       .noValidator)
    }

    /// RFC 9110 13.1.5: no weak tag in If-Range, and no date when the client has an entity tag.
    func testWeakETagRefusesEvenWithAStrongLastModified() {
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "ETag: W/\"v1\"", date,
                                            "Last-Modified: Thu, 26 Nov 2026 09:00:00 GMT")), .weakETag)
    }

    func testNoValidatorMalformedOrRepeatedETagRefuses() {
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10")), .noValidator)
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "ETag: v1")), .noValidator)
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "ETag: \"a\"", "ETag: \"b\"")), .noValidator)
    }

    func testAcceptRangesNoneRefuses() {
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "ETag: \"v\"", "Accept-Ranges: None")),
                       .rangesRefused)
        XCTAssertNotNil(plan(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "ETag: \"v\"", "Accept-Ranges: bytes")))
    }

    func testOnlyGETAndOnlyWhenEnabled() {
        let ok = responseHead("HTTP/1.1 200 OK", "Content-Length: 10", "ETag: \"v\"")
        XCTAssertEqual(refusal(requestHead("POST /up HTTP/1.1", "Host: o.test", "Content-Length: 0"), ok), .method)
        XCTAssertEqual(refusal(requestHead("HEAD /big.bin HTTP/1.1", "Host: o.test"), ok), .method)
        XCTAssertEqual(refusal(ok, policy: ResumePolicy(enabled: false)), .disabled)
        XCTAssertEqual(refusal(ok, policy: ResumePolicy(enabled: true, maxAttempts: 0)), .disabled)
    }

    func testCloseDelimitedBodyCannotBeSeenCutSoIsNotResumable() {
        XCTAssertEqual(refusal(responseHead("HTTP/1.1 200 OK", "ETag: \"v\"")), .closeDelimited)
    }

    func testOtherStatusesAreNotResumable() {
        for status in ["201 Created", "203 Non-Authoritative", "404 Not Found", "500 Oops"] {
            XCTAssertEqual(refusal(responseHead("HTTP/1.1 \(status)", "Content-Length: 10", "ETag: \"v\"")), .status, status)
        }
    }

    /// The client's own range: the resume continues inside it and stops where it stopped.
    func testClientRange206ResumesInsideTheClientsRange() throws {
        let request = requestHead("GET /big.bin HTTP/1.1", "Host: o.test", "Range: bytes=500-999")
        let p = try XCTUnwrap(plan(request, responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 500",
                                                         "Content-Range: bytes 500-999/5000", "ETag: \"v\"")))
        XCTAssertEqual(p.start, 500)
        XCTAssertEqual(p.end, 1000)
        XCTAssertEqual(p.fields(relayed: 100), ResumeFields(range: "bytes=600-999", ifRange: "\"v\""))
        let suffix = try XCTUnwrap(plan(requestHead("GET /b HTTP/1.1", "Host: o.test", "Range: bytes=-500"),
                                        responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 500",
                                                     "Content-Range: bytes 4500-4999/5000", "ETag: \"v\"")))
        XCTAssertEqual(suffix.fields(relayed: 1).range, "bytes=4501-", "a range to the end stays open")
        let headers = p.resumedHeaders(request.headers, relayed: 100)
        XCTAssertEqual(headers.values(name: "range"), ["bytes=600-999"], "the client's Range is replaced, not added to")
        XCTAssertEqual(headers.values(name: "if-range"), ["\"v\""])
        XCTAssertEqual(headers.first(.host), "o.test")
    }

    func testBadOriginal206Refuses() {
        let request = requestHead("GET /b HTTP/1.1", "Host: o.test", "Range: bytes=0-1,5-6")
        XCTAssertEqual(refusal(request, responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 100",
                                                     "Content-Type: multipart/byteranges; boundary=x", "ETag: \"v\"")), .multipart)
        XCTAssertEqual(refusal(request, responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 2",
                                                     "Content-Range: bytes 0-1", "ETag: \"v\"")), .badContentRange)
        XCTAssertEqual(refusal(request, responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3",
                                                     "Content-Range: bytes 0-1/10", "ETag: \"v\"")), .lengthMismatch)
    }

    // MARK: attempts

    func testAttemptsAreCountedAndBounded() throws {
        var p = try XCTUnwrap(plan(responseHead("HTTP/1.1 200 OK", "Content-Length: 5000", "ETag: \"v1\"")))
        XCTAssertEqual(p.nextAttempt(relayed: 10), .success(ResumeFields(range: "bytes=10-", ifRange: "\"v1\"")))
        XCTAssertEqual(p.nextAttempt(relayed: 20), .success(ResumeFields(range: "bytes=20-", ifRange: "\"v1\"")))
        XCTAssertEqual(p.nextAttempt(relayed: 30), .success(ResumeFields(range: "bytes=30-", ifRange: "\"v1\"")))
        XCTAssertEqual(p.nextAttempt(relayed: 40), .failure(.attemptsExhausted))
        XCTAssertEqual(p.attempts, 3)
    }

    // MARK: the resumed response

    private func planFor200() -> ResumePlan? {
        plan(responseHead("HTTP/1.1 200 OK", "Content-Length: 5000", "ETag: \"v1\""))
    }

    func testAccepts206AtTheNextByteWithTheSameETag() throws {
        let p = try XCTUnwrap(planFor200())
        XCTAssertNil(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800",
                                           "Content-Range: bytes 1200-4999/5000", "ETag: \"v1\""), relayed: 1200))
        XCTAssertNil(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Transfer-Encoding: chunked",
                                           "Content-Range: bytes 1200-4999/5000"), relayed: 1200),
                     "a 206 without an ETag: If-Range already matched it")
    }

    func testRefusesEverythingThatWouldSpliceAnotherBody() throws {
        let p = try XCTUnwrap(planFor200())
        let cases: [(ResponseHead, ResumeRefusal)] = [
            (responseHead("HTTP/1.1 200 OK", "Content-Length: 5000", "ETag: \"v2\""), .notPartial),
            (responseHead("HTTP/1.1 416 Range Not Satisfiable", "Content-Range: bytes */5000", "Content-Length: 0"), .unsatisfiable),
            (responseHead("HTTP/1.1 304 Not Modified", "ETag: \"v1\""), .unexpectedStatus),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800",
                          "Content-Range: bytes 1200-4999/5000", "ETag: \"v2\""), .etagChanged),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800",
                          "Content-Range: bytes 1200-4999/5000", "ETag: W/\"v1\""), .etagChanged),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3801",
                          "Content-Range: bytes 1199-4999/5000", "ETag: \"v1\""), .wrongOffset),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800",
                          "Content-Range: bytes 1200-4999/6000", "ETag: \"v1\""), .lengthChanged),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800",
                          "Content-Range: bytes 1200-4999/*", "ETag: \"v1\""), .lengthChanged),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 100",
                          "Content-Range: bytes 1200-1299/5000", "ETag: \"v1\""), .wrongEnd),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 10",
                          "Content-Range: bytes 1200-4999/5000", "ETag: \"v1\""), .lengthMismatch),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800", "ETag: \"v1\""), .badContentRange),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800", "Content-Range: bytes 1200-4999/5000",
                          "Content-Range: bytes 1200-4999/5000", "ETag: \"v1\""), .badContentRange),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 3800",
                          "Content-Range: bytes=1200-4999/5000", "ETag: \"v1\""), .badContentRange),
            (responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 300",
                          "Content-Type: multipart/byteranges; boundary=B", "ETag: \"v1\""), .multipart),
        ]
        for (response, expected) in cases {
            XCTAssertEqual(p.accept(response, relayed: 1200), expected, "\(response.status) \(response.headers)")
        }
    }

    func testLastModifiedPlanRefusesAnotherDateOrAWeakTag() throws {
        let lm = "Thu, 26 Nov 2026 09:00:00 GMT"
        let p = try XCTUnwrap(plan(responseHead("HTTP/1.1 200 OK", "Content-Length: 10", date, "Last-Modified: \(lm)")))
        let range = "Content-Range: bytes 4-9/10"
        XCTAssertNil(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 6", range, "Last-Modified: \(lm)"), relayed: 4))
        XCTAssertEqual(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 6", range,
                                             "Last-Modified: Thu, 26 Nov 2026 09:00:01 GMT"), relayed: 4), .lastModifiedChanged)
        XCTAssertEqual(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 6", range, "ETag: W/\"x\""), relayed: 4),
                       .etagChanged)
    }

    func testClientRangeResumeMustEndWhereTheClientsRangeEnded() throws {
        let request = requestHead("GET /b HTTP/1.1", "Host: o.test", "Range: bytes=500-999")
        let p = try XCTUnwrap(plan(request, responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 500",
                                                         "Content-Range: bytes 500-999/5000", "ETag: \"v\"")))
        XCTAssertNil(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 400",
                                           "Content-Range: bytes 600-999/5000", "ETag: \"v\""), relayed: 100))
        XCTAssertEqual(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 4400",
                                             "Content-Range: bytes 600-4999/5000", "ETag: \"v\""), relayed: 100), .wrongEnd)
        XCTAssertEqual(p.accept(responseHead("HTTP/1.1 206 Partial Content", "Content-Length: 500",
                                             "Content-Range: bytes 100-599/5000", "ETag: \"v\""), relayed: 100), .wrongOffset,
                       "the offset counts from the client's range, not from 0")
    }

    /// The refusal codes are metric labels: short, lower-case, distinct.
    func testRefusalCodesAreBoundedLabels() {
        let codes = ResumeRefusal.allCases.map(\.rawValue)
        XCTAssertEqual(Set(codes).count, codes.count)
        for code in codes {
            XCTAssertTrue(code.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D }, code)
        }
    }
}
