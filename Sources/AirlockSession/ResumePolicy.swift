public import AirlockWire

/// Whether a GET whose upstream connection broke mid-body can be continued from where it
/// stopped (issue #21, AFNetworking's `downloadTaskWithResumeData:` done by the proxy), and if
/// so, how: RFC 9110 8.8 (validators), 13.1.5 (`If-Range`) and 14 (range requests). Pure: the
/// executor asks `plan` once the response head is known, and on a cut asks the plan for the
/// resumed request's fields and then for its verdict on the resumed response's head.
///
/// Eligible only when every rule holds (the refusal names the first that fails):
/// - the route has resume enabled and the method is GET;
/// - the body's end is detectable (Content-Length or chunked; a close-delimited body ends at
///   the close, so a cut is not a cut);
/// - the status is 200, or 206 with one strict `Content-Range` (not multipart/byteranges);
/// - the upstream did not say `Accept-Ranges: none`;
/// - a strong validator: a strong `ETag`, or with no `ETag` at all a `Last-Modified` at least
///   60 s older than `Date` (8.8.2.2). A weak `ETag` refuses even with a good `Last-Modified`:
///   13.1.5 forbids a date in `If-Range` when the client has an entity tag.
public struct ResumePolicy: Sendable, Equatable {
    public var enabled: Bool
    /// Resumed requests allowed per response (each cut uses one).
    public var maxAttempts: Int

    /// RFC 9110 8.8.2.2: a `Last-Modified` this much older than `Date` is a strong validator.
    public static let strongLastModifiedAge: Int64 = 60

    public init(enabled: Bool = true, maxAttempts: Int = 3) {
        self.enabled = enabled
        self.maxAttempts = maxAttempts
    }

    /// Whether this exchange's response can be resumed after a cut.
    public func plan(request: RequestHead, response: ResponseHead) -> ResumeEligibility {
        guard enabled, maxAttempts > 0 else { return .refused(.disabled) }
        guard request.method == .get else { return .refused(.method) }
        switch response.framing(requestMethod: request.method) {
        case .length, .chunked: break
        default: return .refused(.closeDelimited)
        }
        var start: UInt64 = 0
        var end: UInt64?          // last byte + 1, when known
        var completeLength: UInt64?
        switch response.status {
        case 200:
            if case .length(let n) = response.declaredFraming {
                completeLength = UInt64(n)
                end = UInt64(n)
            }
        case 206:
            if Self.isMultipart(response.headers) { return .refused(.multipart) }
            guard let range = Self.contentRange(response.headers), case .bytes(let first, let last, let length) = range else {
                return .refused(.badContentRange)
            }
            if case .length(let n) = response.declaredFraming, UInt64(n) != last - first + 1 {
                return .refused(.lengthMismatch)
            }
            start = first
            end = last + 1
            completeLength = length
        default:
            return .refused(.status)
        }
        if response.headers.listElements(name: "accept-ranges").contains(where: { $0.lowercased() == "none" }) {
            return .refused(.rangesRefused)
        }
        let validator: ResumePlan.Validator
        switch Self.validator(response.headers) {
        case .success(let v): validator = v
        case .failure(let refusal): return .refused(refusal)
        }
        return .resumable(ResumePlan(
            validator: validator, start: start, end: end, completeLength: completeLength, maxAttempts: maxAttempts
        ))
    }

    /// The strong validator `If-Range` may carry, or why there is none.
    static func validator(_ headers: HTTPHeaders) -> Result<ResumePlan.Validator, ResumeRefusal> {
        let etags = headers.values(name: "etag")
        if !etags.isEmpty {
            guard etags.count == 1, let tag = EntityTag(parsing: etags[0]) else { return .failure(.noValidator) }
            return tag.isWeak ? .failure(.weakETag) : .success(.etag(tag))
        }
        let modified = headers.values(name: "last-modified")
        guard modified.count == 1, let lastModified = HTTPDate.parse(modified[0]) else { return .failure(.noValidator) }
        guard let dateText = headers.first(.date), let date = HTTPDate.parse(dateText),
              date - lastModified >= strongLastModifiedAge
        else { return .failure(.recentLastModified) }
        return .success(.lastModified(modified[0], seconds: lastModified))
    }

    /// The one `Content-Range` of a head; nil when absent, repeated or malformed.
    static func contentRange(_ headers: HTTPHeaders) -> ContentRange? {
        let values = headers.values(name: "content-range")
        guard values.count == 1 else { return nil }
        return ContentRange(parsing: values[0])
    }

    static func isMultipart(_ headers: HTTPHeaders) -> Bool {
        guard let type = headers.first(.contentType) else { return false }
        return type.lowercased().hasPrefix("multipart/byteranges")
    }
}

/// `ResumePolicy.plan`'s answer.
public enum ResumeEligibility: Sendable, Equatable {
    case resumable(ResumePlan)
    case refused(ResumeRefusal)
}
