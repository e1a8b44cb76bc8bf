/// A request whose parameters cannot be read or written: the request serializer's counterpart of
/// `ValidationError`. Every case is the client's fault (the gateway answers 400).
///
/// `reason` is short, stable and bounded, fit for a metric label and the reject record;
/// `message` is for people and may quote (a bounded prefix of) the offending key.
public struct RequestSerializationError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: String {
        /// A `%` not followed by two hex digits, or bytes that are not UTF-8 once decoded.
        case invalidFormBody = "invalid-form-body"
        /// One key used with two shapes: `a=1&a[b]=2`, `a[]=1&a[b]=2`.
        case conflictingFormKeys = "conflicting-form-keys"
        /// A key nested deeper than the limit (`a[b][c]…`).
        case formTooDeep = "form-too-deep"
        /// More `key=value` pairs than the limit.
        case formTooManyPairs = "form-too-many-pairs"
        /// A client body the route's serializer cannot merge its parameters into (not a form).
        case unmergeableBody = "unmergeable-body"
    }

    private let code: Code
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A client body that is not a form where the route's serializer needs one.
    public static func unmergeableBody(method: String, expected: String) -> RequestSerializationError {
        RequestSerializationError(.unmergeableBody,
                                  "this route rebuilds the body of a \(method) request from its parameters and needs the client's body as \(expected)")
    }

    /// `invalid-form-body`, `conflicting-form-keys`, `form-too-deep`, `form-too-many-pairs` or
    /// `unmergeable-body`.
    public var reason: String { code.rawValue }

    public var description: String { "\(reason): \(message)" }

    static func invalidEscape(at offset: Int) -> Self {
        Self(.invalidFormBody, "Form body has an invalid percent escape at byte \(offset)")
    }

    static func invalidUTF8(at offset: Int) -> Self {
        Self(.invalidFormBody, "Form body decodes to invalid UTF-8 in the pair at byte \(offset)")
    }

    static func conflictingKey(_ key: String) -> Self {
        Self(.conflictingFormKeys, "Form key '\(quoted(key))' is used both as a value and as a list or a dictionary")
    }

    static func tooDeep(_ key: String, limit: Int) -> Self {
        Self(.formTooDeep, "Form key '\(quoted(key))' is nested deeper than \(limit) levels")
    }

    static func tooManyPairs(limit: Int) -> Self {
        Self(.formTooManyPairs, "Form body has more than \(limit) pairs")
    }

    /// At most 64 characters of a client's key, so that a message stays short.
    private static func quoted(_ key: String) -> String {
        key.count <= 64 ? key : String(key.prefix(64)) + "…"
    }
}
