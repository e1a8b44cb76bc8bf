/// Decides whether an upstream response may be relayed (AFNetworking's `AFURLResponseSerialization`).
public protocol ResponseValidator: Sendable {
    /// True when the whole body must be read before deciding (json, xml, image, plist, a compound containing one).
    var needsBody: Bool { get }

    /// Head-only check (status + content type). For head-only validators this is the whole decision;
    /// for the others an acceptance only means the body is still to be checked.
    /// When `head.bodyIsEmpty` is nil the body is taken to be non-empty.
    func validate(head: ResponseFacts) -> ValidationResult

    /// Full check with the complete body (called only when `needsBody`; head-only validators answer too,
    /// judging emptiness by `body`).
    func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult
}
