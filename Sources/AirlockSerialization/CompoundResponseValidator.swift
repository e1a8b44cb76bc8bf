/// Tries validators in order (AFNetworking's `AFCompoundResponseSerializer`): the first that accepts
/// wins, with its transformed body if any; when none accepts, the first one's error is returned.
/// With no validators every response is accepted.
public struct CompoundResponseValidator: ResponseValidator {
    public var validators: [any ResponseValidator]

    public init(validators: [any ResponseValidator]) {
        self.validators = validators
    }

    public var needsBody: Bool { validators.contains { $0.needsBody } }

    public func validate(head: ResponseFacts) -> ValidationResult {
        firstAcceptance { $0.validate(head: head) }
    }

    public func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult {
        firstAcceptance { $0.validate(head: head, body: body) }
    }

    private func firstAcceptance(_ attempt: (any ResponseValidator) -> ValidationResult) -> ValidationResult {
        var firstError: ValidationError?
        for validator in validators {
            switch attempt(validator) {
            case .accepted(let body):
                return .accepted(body: body)
            case .rejected(let error):
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { return .rejected(firstError) }
        return .accepted(body: nil)
    }
}
