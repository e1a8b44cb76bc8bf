/// The HTTP checks, then a well-formed XML 1.0 body (AFNetworking's `AFXMLParserResponseSerializer`).
public struct XMLResponseValidator: BodyResponseValidator {
    /// application/xml, text/xml.
    public static let defaultContentTypes: Set<String> = ["application/xml", "text/xml"]

    public var base: HTTPResponseValidator

    public init(base: HTTPResponseValidator = HTTPResponseValidator(acceptableContentTypes: defaultContentTypes)) {
        self.base = base
    }

    /// An empty body is not a document and is rejected.
    public func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult {
        if let error = base.headError(head, bodyIsEmpty: body.isEmpty) { return .rejected(error) }
        if let failure = body.withUnsafeBytes({ XMLValidation.check($0) }) {
            return .rejected(.invalidXML(failure, url: head.url))
        }
        return .accepted(body: nil)
    }
}
