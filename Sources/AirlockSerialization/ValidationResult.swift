/// A validator's decision on one response.
public enum ValidationResult: Sendable {
    /// `body` holds replacement bytes when the validator transformed the body
    /// (null stripping); nil means relay the body as received.
    case accepted(body: [UInt8]?)
    case rejected(ValidationError)
}
