/// The HTTP checks, then a well-formed XML or binary property list
/// (AFNetworking's `AFPropertyListResponseSerializer`, without building the objects).
public struct PropertyListResponseValidator: BodyResponseValidator {
    /// application/x-plist (AFNetworking's default).
    public static let defaultContentTypes: Set<String> = ["application/x-plist"]

    public var base: HTTPResponseValidator

    public init(base: HTTPResponseValidator = HTTPResponseValidator(acceptableContentTypes: defaultContentTypes)) {
        self.base = base
    }

    /// An empty body is not a property list and is rejected.
    public func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult {
        if let error = base.headError(head, bodyIsEmpty: body.isEmpty) { return .rejected(error) }
        if let failure = body.withUnsafeBytes({ PropertyListValidation.check($0) }) {
            return .rejected(.invalidPropertyList(failure, url: head.url))
        }
        return .accepted(body: nil)
    }
}
