/// The HTTP checks, then a strict RFC 8259 body (AFNetworking's `AFJSONResponseSerializer`).
public struct JSONResponseValidator: BodyResponseValidator {
    /// application/json, text/json, text/javascript.
    public static let defaultContentTypes: Set<String> = ["application/json", "text/json", "text/javascript"]

    public var base: HTTPResponseValidator
    /// Strip null-valued object members and null array elements before relaying.
    public var removesKeysWithNullValues: Bool

    public init(
        base: HTTPResponseValidator = HTTPResponseValidator(acceptableContentTypes: defaultContentTypes),
        removesKeysWithNullValues: Bool = false
    ) {
        self.base = base
        self.removesKeysWithNullValues = removesKeysWithNullValues
    }

    /// An empty body, or a single space (Rails' `head :ok`), is a valid "nothing". With
    /// `removesKeysWithNullValues` the accepted body is the stripped document, or nil when
    /// it held no null to remove.
    public func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult {
        if let error = base.headError(head, bodyIsEmpty: body.isEmpty) { return .rejected(error) }
        if body.isEmpty || (body.count == 1 && body[0] == 0x20) { return .accepted(body: nil) }
        let outcome = body.withUnsafeBytes { JSONValidation.scan($0) }
        if let failure = outcome.failure { return .rejected(.invalidJSON(failure.description, url: head.url)) }
        guard removesKeysWithNullValues, outcome.hasNullInContainer else { return .accepted(body: nil) }
        return .accepted(body: JSONValidation.removingNullsFromValid(body))
    }
}
