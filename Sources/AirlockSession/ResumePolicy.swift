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

/// Why a response is not resumed, or a resumed response not spliced. The raw value is a short
/// stable code, the `result` label of `airlock_resumes_total{route,result}`.
public enum ResumeRefusal: String, Error, Sendable, Equatable, CaseIterable {
    // The original response (`ResumePolicy.plan`).
    case disabled = "disabled"
    case method = "method"
    case closeDelimited = "close-delimited"
    case status = "status"
    case multipart = "multipart"
    case badContentRange = "bad-content-range"
    case lengthMismatch = "length-mismatch"
    case rangesRefused = "ranges-refused"
    case noValidator = "no-validator"
    case weakETag = "weak-etag"
    case recentLastModified = "recent-last-modified"
    // A cut (`ResumePlan.nextAttempt`).
    case attemptsExhausted = "attempts-exhausted"
    // The resumed response (`ResumePlan.accept`).
    case notPartial = "not-partial"               // 200: the whole representation again
    case unsatisfiable = "unsatisfiable"          // 416
    case unexpectedStatus = "unexpected-status"   // anything else
    case wrongOffset = "wrong-offset"             // Content-Range does not start at the next byte
    case wrongEnd = "wrong-end"                   // nor end where the original did
    case lengthChanged = "length-changed"         // another complete length
    case etagChanged = "etag-changed"             // another (or a weak) entity tag
    case lastModifiedChanged = "last-modified-changed"
}

/// A resumable response: what to ask for after a cut and what to accept.
public struct ResumePlan: Sendable, Equatable {
    public enum Validator: Sendable, Equatable {
        case etag(EntityTag)
        /// The field text as received (sent back verbatim in `If-Range`) and its time.
        case lastModified(String, seconds: Int64)

        /// The `If-Range` value: the entity tag, or the date exactly as the origin wrote it.
        public var ifRange: String {
            switch self {
            case .etag(let tag): tag.text
            case .lastModified(let text, _): text
            }
        }
    }

    public let validator: Validator
    /// Offset in the representation of the original body's first byte: 0 for a 200, the
    /// `Content-Range` start for a 206 (the client's own range).
    public let start: UInt64
    /// Offset just past the original body's last byte, when known.
    public let end: UInt64?
    /// The representation's complete length, when known.
    public let completeLength: UInt64?
    public let maxAttempts: Int
    /// Resumed requests made so far.
    public private(set) var attempts = 0

    public init(validator: Validator, start: UInt64, end: UInt64?, completeLength: UInt64?, maxAttempts: Int) {
        self.validator = validator
        self.start = start
        self.end = end
        self.completeLength = completeLength
        self.maxAttempts = maxAttempts
    }

    /// After a cut with `relayed` body bytes at the client: the fields of the resumed request
    /// (`Range` from the next byte to the original's end, `If-Range`), counting one attempt;
    /// or the refusal when the attempts are used up.
    public mutating func nextAttempt(relayed: UInt64) -> Result<ResumeFields, ResumeRefusal> {
        guard attempts < maxAttempts else { return .failure(.attemptsExhausted) }
        attempts += 1
        return .success(fields(relayed: relayed))
    }

    /// `Range: bytes=S+N-` (or `S+N-E-1` when the original covered a bounded range), `If-Range`.
    public func fields(relayed: UInt64) -> ResumeFields {
        let from = start + relayed
        var range = "bytes=\(from)-"
        if let end, end != completeLength { range += "\(end - 1)" }
        return ResumeFields(range: range, ifRange: validator.ifRange)
    }

    /// The original request's fields for the resumed request: its own `Range` and `If-Range`
    /// replaced by the plan's.
    public func resumedHeaders(_ original: HTTPHeaders, relayed: UInt64) -> HTTPHeaders {
        var headers = original
        headers.removeAll(name: "range")
        headers.removeAll(name: "if-range")
        let fields = fields(relayed: relayed)
        headers.append(name: "Range", value: fields.range)
        headers.append(name: "If-Range", value: fields.ifRange)
        return headers
    }

    /// Whether the resumed response continues the client's body byte-exactly: only a 206 whose
    /// single `Content-Range` starts at the next byte, ends where the original did, keeps the
    /// complete length, and whose validator is the same strong one.
    public func accept(_ response: ResponseHead, relayed: UInt64) -> ResumeRefusal? {
        switch response.status {
        case 206: break
        case 200: return .notPartial
        case 416: return .unsatisfiable
        default: return .unexpectedStatus
        }
        if ResumePolicy.isMultipart(response.headers) { return .multipart }
        guard let range = ResumePolicy.contentRange(response.headers),
              case .bytes(let first, let last, let length) = range
        else { return .badContentRange }
        guard first == start + relayed else { return .wrongOffset }
        if let completeLength, length != completeLength { return .lengthChanged }
        if let end, last + 1 != end { return .wrongEnd }
        if case .length(let n) = response.declaredFraming, UInt64(n) != last - first + 1 { return .lengthMismatch }
        let etags = response.headers.values(name: "etag")
        switch validator {
        case .etag(let original):
            if !etags.isEmpty {
                guard etags.count == 1, let tag = EntityTag(parsing: etags[0]), tag.strongMatch(original) else { return .etagChanged }
            }
        case .lastModified(_, let seconds):
            if !etags.isEmpty {
                guard etags.count == 1, let tag = EntityTag(parsing: etags[0]), !tag.isWeak else { return .etagChanged }
            }
            let modified = response.headers.values(name: "last-modified")
            if !modified.isEmpty {
                guard modified.count == 1, HTTPDate.parse(modified[0]) == seconds else { return .lastModifiedChanged }
            }
        }
        return nil
    }
}

/// The fields a resumed request adds.
public struct ResumeFields: Sendable, Equatable {
    public var range: String
    public var ifRange: String

    public init(range: String, ifRange: String) {
        self.range = range
        self.ifRange = ifRange
    }
}
