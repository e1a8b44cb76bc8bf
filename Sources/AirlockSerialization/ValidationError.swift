import AirlockWire

/// A rejected upstream response, in AFNetworking's terms: an `NSURLError` code, a message,
/// and the error it was chained onto (the content-type error under the status error).
///
/// A class so that it can hold another `ValidationError` as `underlying`.
public final class ValidationError: Error, Sendable, CustomStringConvertible {
    public let reason: RejectReason
    /// -1011 status, -1016 content type, -1017 cannot decode (json/xml/image/plist), -1103 body too large.
    public let code: Int
    public let message: String
    public let underlying: ValidationError?
    /// The request URL of the failing response, when known.
    public let failingURL: String?

    public init(reason: RejectReason, code: Int, message: String, underlying: ValidationError? = nil,
                failingURL: String? = nil) {
        self.reason = reason
        self.code = code
        self.message = message
        self.underlying = underlying
        self.failingURL = failingURL
    }

    /// `NSURLErrorBadServerResponse`.
    public static let badServerResponseCode = -1011
    /// `NSURLErrorCannotDecodeContentData`.
    public static let cannotDecodeContentDataCode = -1016
    /// `NSURLErrorCannotParseResponse`.
    public static let cannotParseResponseCode = -1017
    /// `NSURLErrorDataLengthExceedsMaximum`.
    public static let dataLengthExceedsMaximumCode = -1103

    /// "Request failed: Not Found (404)", carrying the content-type error (if any) as `underlying`.
    public static func unacceptableStatus(_ status: Int, url: String?, underlying: ValidationError? = nil)
        -> ValidationError
    {
        ValidationError(
            reason: .unacceptableStatus, code: badServerResponseCode,
            message: "Request failed: \(ReasonPhrase.standard(for: status)) (\(status))",
            underlying: underlying, failingURL: url)
    }

    /// "Request failed: unacceptable content-type: text/html"; "(none)" without a Content-Type.
    public static func unacceptableContentType(_ mimeType: String?, url: String?) -> ValidationError {
        ValidationError(
            reason: .unacceptableContentType, code: cannotDecodeContentDataCode,
            message: "Request failed: unacceptable content-type: \(mimeType ?? "(none)")", failingURL: url)
    }

    public static func invalidJSON(_ detail: String, url: String?) -> ValidationError {
        ValidationError(
            reason: .invalidJSON, code: cannotParseResponseCode,
            message: "Response body is not valid JSON: \(detail)", failingURL: url)
    }

    public static func invalidXML(_ detail: String, url: String?) -> ValidationError {
        ValidationError(
            reason: .invalidXML, code: cannotParseResponseCode,
            message: "Response body is not well-formed XML: \(detail)", failingURL: url)
    }

    public static func invalidPropertyList(_ detail: String, url: String?) -> ValidationError {
        ValidationError(
            reason: .invalidPropertyList, code: cannotParseResponseCode,
            message: "Response body is not a valid property list: \(detail)", failingURL: url)
    }

    public static func invalidImage(url: String?) -> ValidationError {
        ValidationError(
            reason: .invalidImage, code: cannotParseResponseCode,
            message: "Response body is not a supported image (PNG, JPEG, GIF, TIFF, BMP or ICO)",
            failingURL: url)
    }

    /// "Response body exceeds the limit of N bytes" (-1103); the gateway enforces the limit itself.
    public static func bodyTooLarge(limit: Int) -> ValidationError {
        ValidationError(
            reason: .bodyTooLarge, code: dataLengthExceedsMaximumCode,
            message: "Response body exceeds the limit of \(limit) bytes")
    }

    /// "unacceptable-status (-1011): Request failed: Not Found (404); underlying: unacceptable-content-type ...".
    public var description: String {
        let own = "\(reason.rawValue) (\(code)): \(message)"
        guard let underlying else { return own }
        return "\(own); underlying: \(underlying.description)"
    }
}
