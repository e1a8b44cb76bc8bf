import AirlockIO
import AirlockWire

/// The one decode loop of a message body, for every body an exchange reads (the request body
/// relayed, collected, validated as multipart, paced, or judged after the response; the
/// response body relayed or read for its validator): decode from `src` and hand each payload
/// slice to `payload`, which consumes exactly those bytes from `src`'s input (moves, copies or
/// drains them) and says whether to go on (false: backpressure, a budget spent, a refusal).
/// Framing bytes (chunk sizes, trailers) are drained here; `end` runs at the body's last byte.
enum BodyPump {
    enum Stop {
        case complete     // the body's last byte was read
        case needMore     // the input has nothing more to decode
        case held         // `payload` asked to stop
    }

    /// `limit`: input bytes the decoder may see at a time (a throttled upload's budget).
    @inline(__always) @discardableResult
    static func pump(_ src: Stream, _ decoder: inout BodyDecoder, limit: () -> Int = { .max },
                     end: () -> Void = {}, payload: (Int) throws(WireError) -> Bool) throws(WireError) -> Stop {
        while !decoder.isComplete {
            let available = min(src.inputLength, limit())
            let event: BodyDecoder.Event = try src.withInput(max: BodyDecoder.maxLineBytes) { buf throws(WireError) in
                try decoder.next(buf, available: available)
            }
            switch event {
            case .data(let n):
                if try !payload(n) { return decoder.isComplete ? .complete : .held }
            case .framing(let n):
                src.drainInput(n)
            case .end(let n):
                src.drainInput(n)
                end()
            case .needMore:
                return .needMore
            }
        }
        return .complete
    }
}
