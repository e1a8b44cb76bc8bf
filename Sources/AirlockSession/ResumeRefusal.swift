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
