public import AirlockWire

/// Whether a body's payload moves socket to socket with `splice(2)` or is copied through
/// memory (HAProxy's `option splice-auto`), decided in one place: a body is spliced only when
/// nothing needs its bytes. The executor asks before each payload section (a Content-Length
/// rest, a chunk's rest, a close-delimited body) once the bytes that came with the head have
/// gone the copying way, and carries out the answer (`Stream.startSplice`).
public enum SplicePolicy {
    public enum Decision: Sendable, Equatable {
        /// Splice up to this many payload bytes (`Int.max`: until the connection closes).
        case splice(budget: Int)
        case copy(Refusal)
    }

    /// Why a body is copied: each is a bounded value, fit for a metric label.
    public enum Refusal: String, Sendable, Equatable {
        case disabled = "disabled"              // limits.splice: false
        case tls = "tls"                        // either side runs TLS: the bytes are not the socket's
        case inputBuffered = "input-buffered"   // bytes already read go the copying way first
        case validator = "validator"            // a body validator reads the payload
        case sample = "sample"                  // a report-only reject still keeps its first bytes
        case cacheTee = "cache-tee"             // the response cache keeps a copy
        case reframing = "reframing"            // the output framing needs the payload's size first
        case framing = "framing"                // the decoder is between payload sections (chunk lines)
    }

    /// What the executor knows when it may splice.
    public struct Facts: Sendable, Equatable {
        public var enabled: Bool
        /// Both sockets carry the bytes as they are (no TLS session on either).
        public var plainBothSides: Bool
        /// Decoded bytes still buffered in the source's input.
        public var inputBuffered: Int
        public var validating: Bool
        public var sampling: Bool
        public var teeing: Bool
        /// The framing the body arrives with, and the one it leaves with.
        public var inFraming: BodyFraming
        public var out: OutFraming

        public init(enabled: Bool, plainBothSides: Bool, inputBuffered: Int, validating: Bool = false,
                    sampling: Bool = false, teeing: Bool = false, inFraming: BodyFraming, out: OutFraming) {
            self.enabled = enabled
            self.plainBothSides = plainBothSides
            self.inputBuffered = inputBuffered
            self.validating = validating
            self.sampling = sampling
            self.teeing = teeing
            self.inFraming = inFraming
            self.out = out
        }
    }

    /// The decision for the payload section `decoder` is in.
    public static func decide(_ f: Facts, decoder: BodyDecoder) -> Decision {
        if !f.enabled { return .copy(.disabled) }
        if !f.plainBothSides { return .copy(.tls) }
        if f.validating { return .copy(.validator) }
        if f.sampling { return .copy(.sample) }
        if f.teeing { return .copy(.cacheTee) }
        if !framingKept(f.inFraming, f.out) { return .copy(.reframing) }
        if f.inputBuffered > 0 { return .copy(.inputBuffered) }
        guard let budget = payloadBudget(decoder) else { return .copy(.framing) }
        return .splice(budget: budget)
    }

    /// Whether the output framing can be written without the payload: the same length, chunk
    /// by chunk (the sizes are known before the bytes), or no framing at all (close-delimited
    /// out). A close-delimited body re-framed as chunked would need each chunk's size first.
    static func framingKept(_ inFraming: BodyFraming, _ out: OutFraming) -> Bool {
        switch (inFraming, out) {
        case (.length, .length), (.chunked, .chunked), (.length, .close), (.chunked, .close), (.closeDelimited, .close):
            return true
        default:
            return false
        }
    }

    /// The payload bytes the decoder takes next without reading them: a Content-Length rest,
    /// the current chunk's rest, `Int.max` for a close-delimited body; nil between payload
    /// sections (a chunk line, a trailer) or at the end.
    public static func payloadBudget(_ decoder: BodyDecoder) -> Int? {
        var d = decoder
        guard case .data(let n)? = try? d.next(UnsafeRawBufferPointer(start: nil, count: 0), available: .max), n > 0
        else { return nil }
        return n
    }

    /// Tells the decoder that `n` payload bytes went past it (spliced): it moves on as if it
    /// had relayed them. `n` is at most the budget it gave.
    public static func consumed(_ n: Int, by decoder: inout BodyDecoder) {
        _ = try? decoder.next(UnsafeRawBufferPointer(start: nil, count: 0), available: n)
    }
}
