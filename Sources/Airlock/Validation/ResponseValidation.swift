import AirlockSerialization
import AirlockWire

/// The validate phase of one exchange. An `Exchange` holds one only when its route has a
/// `response:` block and the response needs its body read or was rejected on its head; every
/// other response streams exactly as on a route without validation.
final class ResponseValidation {
    enum Phase: Equatable {
        case buffering         // body validator: payload into `body`, up to the limit → .delivering, or rejected
        case drainingRejected  // enforce, rejected on the head: the body is read for its sample → reject answer
        case relaying          // report-only reject: the response streams as usual; `body` keeps the sample
        case delivering        // the validated (or report-only) body goes to the client at its pace → final
    }

    /// The first bytes of a failing body kept for its reject record.
    static let sampleBytes = 1024

    let config: ResponseValidationConfig
    let validator: any ResponseValidator
    let facts: ResponseFacts
    var phase: Phase
    /// The buffered payload (`.buffering`), else the sample of the body seen so far.
    var body: [UInt8] = []
    /// Decoded payload bytes read from the upstream.
    var payloadBytes = 0
    var rejection: ValidationError?
    /// The reject record has been written (it is written once, by the logging phase).
    var recorded = false
    /// `.delivering`: what goes to the client, and how much of it has gone.
    var out: [UInt8] = []
    var outOffset = 0

    init(config: ResponseValidationConfig, validator: any ResponseValidator, facts: ResponseFacts, phase: Phase,
         rejection: ValidationError? = nil) {
        self.config = config
        self.validator = validator
        self.facts = facts
        self.phase = phase
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
