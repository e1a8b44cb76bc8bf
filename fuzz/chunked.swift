@testable import AirlockWire

// Fuzz target `chunked`: BodyDecoder on a chunked body directly, without a head in front, so
// every mutation lands in chunk lines, chunk data and trailers.
//
// Input: one control byte (option bit 0: a 64-byte trailer limit instead of 8192), then the
// body bytes. Up to three bodies are decoded back to back (the bytes after a complete body are
// the next one, as on a keep-alive connection), then EOF. Run all at once and split by the
// control byte; both runs must agree. Each body (fuzz/Support/Driver.swift `readBody`): the
// event contract (data/framing sizes within what was shown, payloadBytes exact), an
// independent check of the consumed bytes against the chunked grammar (sizes equal the data
// that follows, CRLF after data, field-line trailers), and the payload re-framed by
// ChunkedEncoder decodes back to itself.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunked(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let control = Control(byte: data[0])
    let stream = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let maxTrailerBytes = control.option & 1 == 0 ? 8192 : 64

    func bodies(_ feed: inout Feed) -> [BodyRead] {
        var out: [BodyRead] = []
        for _ in 0..<3 {
            let body = readBody(&feed, framing: .chunked, maxTrailerBytes: maxTrailerBytes)
            out.append(body)
            guard body.complete, feed.pos < feed.bytes.count else { break }
        }
        return out
    }
    var whole = Feed(all: stream)
    let first = bodies(&whole)
    var split = Feed(split: stream, control: control)
    let second = bodies(&split)
    check(first == second, "split arrival changed the outcome:\n  whole: \(first)\n  split: \(second)")
    check(whole.pos == split.pos, "split arrival consumed \(split.pos) bytes, whole \(whole.pos)")
    return 0
}
