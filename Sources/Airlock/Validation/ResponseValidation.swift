import AirlockSerialization
import AirlockWire

/// The validate phase's data for one exchange (where it stands is `ExchangeMachine.validation`).
/// An `Exchange` holds one only when its route has a `response:` block and the response needs
/// its body read or was rejected on its head; every other response streams exactly as on a
/// route without validation.
final class ResponseValidation {
    /// The first bytes of a failing body kept for its reject record.
    static let sampleBytes = 1024

    let config: ResponseValidationConfig
    let validator: any ResponseValidator
    let facts: ResponseFacts
    /// The buffered payload (`ExchangeMachine.Validation.buffering`), else the sample of the body seen so far.
    var body: [UInt8] = []
    /// Decoded payload bytes read from the upstream.
    var payloadBytes = 0
    var rejection: ValidationError?
    /// The reject record has been written (it is written once, by the logging phase).
    var recorded = false
    /// What the body validator made of an accepted body (nil: the body as read).
    var transformed: [UInt8]?
    /// `.delivering`: what goes to the client, and how much of it has gone.
    var out: [UInt8] = []
    var outOffset = 0

    init(config: ResponseValidationConfig, validator: any ResponseValidator, facts: ResponseFacts,
         rejection: ValidationError? = nil) {
        self.config = config
        self.validator = validator
        self.facts = facts
        self.rejection = rejection
    }

    /// Room left in the sample.
    var sampleRoom: Int { max(0, Self.sampleBytes - body.count) }

    var sample: ArraySlice<UInt8> { body.prefix(Self.sampleBytes) }

    /// `.none` or `.length(0)` → true, `.length(n > 0)` → false, chunked or close-delimited → nil.
    static func bodyIsEmpty(_ framing: BodyFraming) -> Bool? {
        switch framing {
        case .none, .length(0): true
        case .length: false
        case .chunked, .closeDelimited: nil
        }
    }
}
