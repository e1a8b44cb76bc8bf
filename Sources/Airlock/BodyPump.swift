import AirlockIO
import AirlockSerialization
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

    /// Moves decoded payload from `src` to `dst`, re-framing chunked output.
    /// Returns when the body is complete or the input has nothing more to decode.
    /// `bounded`: stops once `dst` holds `highWatermark` bytes (backpressure).
    /// `sample` (a report-only reject) keeps a copy of the first payload bytes for its record;
    /// `tee` (a response the cache may store) a copy of the whole body.
    @inline(__always)
    static func relay(from src: Stream, to dst: Stream, decoder: inout BodyDecoder, out: OutFraming,
                      bounded: Bool = true, highWatermark: Int, sample: ResponseValidation? = nil,
                      tee: Exchange? = nil, counted: (Int) -> Void) throws(WireError) {
        let chunked = out == .chunked
        try BodyPump.pump(src, &decoder, end: { if chunked { dst.write(ChunkedEncoder.last) } }) { n in
            if let sample, sample.sampleRoom > 0 {
                src.withInput(max: min(n, sample.sampleRoom)) { sample.body.append(contentsOf: $0) }
            }
            if let tee { tee.teeResponseBody(src, n) }   // a copy for the response cache, up to its `max_object`
            if chunked { dst.write(ChunkedEncoder.chunkHeader(size: n)) }
            src.moveInput(n, to: dst)
            if chunked { dst.write(ChunkedEncoder.chunkTrailer) }
            counted(n)
            return !bounded || dst.outputLength < highWatermark
        }
    }

    /// Starts splicing a payload section of `budget` bytes from `src` to `dst` (the caller asked
    /// `SplicePolicy`); chunked output gets the section's size line first (the section is the
    /// rest of one input chunk). `moved` hears of every byte that went. False: the streams could
    /// not splice, and the body goes on the copying way.
    static func splice(from src: Stream, to dst: Stream, budget: Int, out: OutFraming,
                       moved: @escaping (Int) -> Void) -> Bool {
        guard src.startSplice(to: dst, budget: budget, moved: moved) else { return false }
        // Queued behind the pipe's earlier bytes, ahead of this section's: the source splices
        // only once it has gone.
        if out == .chunked { dst.write(ChunkedEncoder.chunkHeader(size: budget)) }
        return true
    }

    /// A spliced payload section is over (its budget spent): `src` reads the ordinary way again
    /// (the next chunk line), and a chunk written to `dst` is closed.
    static func spliceSectionEnded(from src: Stream, to dst: Stream, out: OutFraming) {
        src.stopSplice()
        if out == .chunked { dst.write(ChunkedEncoder.chunkTrailer) }
    }
}
