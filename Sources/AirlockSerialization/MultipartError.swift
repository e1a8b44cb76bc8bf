/// A `multipart/form-data` request body (or its Content-Type) that `validate_multipart` refuses:
/// the client's fault, found by `MultipartBoundary` or `MultipartValidator` while the body streams.
///
/// `reason` is short, stable and bounded, fit for a metric label and the reject record;
/// `message` is for people and says where (a byte offset into the body) when it can.
public struct MultipartError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: String {
        /// The Content-Type's media type is not `multipart/form-data`.
        case notFormData = "multipart-not-form-data"
        /// `multipart/form-data` without a `boundary` parameter.
        case noBoundary = "multipart-no-boundary"
        /// A boundary that breaks RFC 2046 §5.1.1, given twice, or a malformed parameter list.
        case badBoundary = "multipart-bad-boundary"
        /// After `--boundary`: neither `--` nor transport padding and CRLF.
        case badDelimiter = "multipart-bad-delimiter"
        /// A LF without CR before it, or a CR without LF after it, outside part content.
        case badLineEnding = "multipart-bad-line-ending"
        /// A part header line without a colon, with a name that is not a token, folded, or with
        /// a control byte in its value.
        case badHeader = "multipart-bad-header"
        /// A part without a `Content-Disposition` header.
        case noDisposition = "multipart-no-disposition"
        /// A `Content-Disposition` that is not `form-data` with a `name`, malformed, or given twice.
        case badDisposition = "multipart-bad-disposition"
        /// More part header bytes than the limit.
        case headersTooLarge = "multipart-headers-too-large"
        /// More parts than the limit.
        case tooManyParts = "multipart-too-many-parts"
        /// The body ended before the close delimiter `--boundary--`.
        case truncated = "multipart-truncated"
    }

    private let code: Code
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// One of `multipart-not-form-data`, `-no-boundary`, `-bad-boundary`, `-bad-delimiter`,
    /// `-bad-line-ending`, `-bad-header`, `-no-disposition`, `-bad-disposition`,
    /// `-headers-too-large`, `-too-many-parts`, `-truncated`.
    public var reason: String { code.rawValue }

    public var description: String { "\(reason): \(message)" }

    static var notFormData: Self { Self(.notFormData, "Content-Type is not multipart/form-data") }

    static var noBoundary: Self {
        Self(.noBoundary, "Content-Type multipart/form-data has no boundary parameter")
    }

    static func badBoundary(_ why: String) -> Self { Self(.badBoundary, "Multipart boundary \(why)") }

    static func badDelimiter(at offset: Int) -> Self {
        Self(.badDelimiter, "Multipart delimiter is followed by neither '--' nor CRLF at byte \(offset)")
    }

    static func badLineEnding(at offset: Int) -> Self {
        Self(.badLineEnding, "Multipart body has a line not ended by CRLF at byte \(offset)")
    }

    static func badHeader(_ why: String, at offset: Int) -> Self {
        Self(.badHeader, "Multipart part header \(why) at byte \(offset)")
    }

    static func noDisposition(part: Int, at offset: Int) -> Self {
        Self(.noDisposition, "Multipart part \(part) has no Content-Disposition header (headers end at byte \(offset))")
    }

    static func badDisposition(_ why: String, part: Int, at offset: Int) -> Self {
        Self(.badDisposition, "Multipart part \(part) Content-Disposition \(why) at byte \(offset)")
    }

    static func headersTooLarge(part: Int, limit: Int) -> Self {
        Self(.headersTooLarge, "Multipart part \(part) has more than \(limit) bytes of headers")
    }

    static func tooManyParts(limit: Int) -> Self {
        Self(.tooManyParts, "Multipart body has more than \(limit) parts")
    }

    static func truncated(after bytes: Int) -> Self {
        Self(.truncated, "Multipart body ended after \(bytes) bytes without the close delimiter")
    }
}
