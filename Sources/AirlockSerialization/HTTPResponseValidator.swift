/// Status codes and content types only (AFNetworking's `AFHTTPResponseSerializer`).
public struct HTTPResponseValidator: ResponseValidator {
    public var acceptableStatusCodes: StatusCodeSet
    /// Lowercased MIME types without parameters; nil accepts any.
    public var acceptableContentTypes: Set<String>?

    public init(acceptableStatusCodes: StatusCodeSet = .success, acceptableContentTypes: Set<String>? = nil) {
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
    }

    public var needsBody: Bool { false }

    public func validate(head: ResponseFacts) -> ValidationResult {
        if let error = headError(head, bodyIsEmpty: head.bodyIsEmpty ?? false) { return .rejected(error) }
        return .accepted(body: nil)
    }

    public func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult {
        if let error = headError(head, bodyIsEmpty: body.isEmpty) { return .rejected(error) }
        return .accepted(body: nil)
    }

    /// `validateResponse:data:error:`. A content type outside the set is an error only when there is
    /// a body (an empty body without a Content-Type always passes). When the status fails too, the
    /// status error is returned with the content-type error as `underlying`.
    func headError(_ head: ResponseFacts, bodyIsEmpty: Bool) -> ValidationError? {
        var error: ValidationError?
        if let acceptableContentTypes, !bodyIsEmpty {
            let mimeType = head.mimeType
            if mimeType.map(acceptableContentTypes.contains) != true {
                error = .unacceptableContentType(mimeType, url: head.url)
            }
        }
        if !acceptableStatusCodes.contains(head.status) {
            error = .unacceptableStatus(head.status, url: head.url, underlying: error)
        }
        return error
    }
}
