/// A validator that narrows the base HTTP checks with a check of the whole body (as
/// AFNetworking's serializers subclass AFHTTPResponseSerializer): the body must be read
/// before deciding, and on the head alone it can only apply the base checks.
public protocol BodyResponseValidator: ResponseValidator {
    var base: HTTPResponseValidator { get }
}

extension BodyResponseValidator {
    public var needsBody: Bool { true }

    public func validate(head: ResponseFacts) -> ValidationResult {
        base.validate(head: head)
    }
}
