public import AirlockWire

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
