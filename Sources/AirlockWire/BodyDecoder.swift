/// Incremental body decoder that never copies payload: it tells the caller how many bytes of its
/// input are payload and how many are framing, so the caller can move payload zero-copy.
///
///     var decoder = BodyDecoder(framing: head.framing)
///     loop: switch try decoder.next(prefix, available: buffered) {
///     case .data(let n): forward n bytes;  case .framing(let n): drop n bytes
///     case .needMore: read more;           case .end(let n): drop n bytes, done }
public struct BodyDecoder: Sendable {
    /// Longest chunk-size line or trailer line accepted, its CRLF included.
    public static let maxLineBytes = 4096

    private enum State: Sendable, Equatable {
        case length(remaining: UInt64)      // → done when remaining reaches 0
        case closeDelimited                 // → done on EOF
        case chunkSize                      // → chunkData, or → trailer after the last chunk
        case chunkData(remaining: UInt64)   // → chunkDataEnd when remaining reaches 0
        case chunkDataEnd                   // → chunkSize after CRLF
        case trailer                        // → done after the empty line
        case done                           // final
    }

    private var state: State
    private let maxTrailerBytes: Int
    private var trailerBytes = 0
    public private(set) var payloadBytes: UInt64 = 0

    public init(framing: BodyFraming, maxTrailerBytes: Int = 8192) {
        self.maxTrailerBytes = maxTrailerBytes
        switch framing {
        case .none, .length(0): state = .done
        case .length(let n): state = .length(remaining: n)
        case .chunked: state = .chunkSize
        case .closeDelimited: state = .closeDelimited
        }
    }

    public enum Event: Sendable, Equatable {
        /// The next n input bytes are payload (n > 0).
        case data(Int)
        /// The next n input bytes are framing (chunk line, CRLF, trailer line): drop them.
        case framing(Int)
        /// Nothing decodable in the given input.
        case needMore
        /// Body complete after dropping the next `framing` bytes (0 for length/none).
        case end(framing: Int)
    }

    public var isComplete: Bool { state == .done }

    /// `input` is a contiguous prefix of the `available` buffered bytes, with
    /// `input.count >= min(available, maxLineBytes)`. In payload states it does not read the
    /// bytes: it returns `.data(min(remaining, available))`. In line states it scans `input`.
    /// After the caller consumes what the event says, it calls `next` again. Once complete it
    /// keeps returning `.end(framing: 0)`.
    public mutating func next(_ input: UnsafeRawBufferPointer, available: Int) throws(WireError) -> Event {
        switch state {
        case .done:
            return .end(framing: 0)

        case .length(let remaining):
            guard available > 0 else { return .needMore }
            let n = take(remaining, available)
            state = remaining == UInt64(n) ? .done : .length(remaining: remaining - UInt64(n))
            return .data(n)

        case .closeDelimited:
            guard available > 0 else { return .needMore }
            payloadBytes &+= UInt64(available)
            return .data(available)

        case .chunkData(let remaining):
            guard available > 0 else { return .needMore }
            let n = take(remaining, available)
            state = remaining == UInt64(n) ? .chunkDataEnd : .chunkData(remaining: remaining - UInt64(n))
            return .data(n)

        case .chunkDataEnd:
            if input.count >= 1 && input[0] != ByteClass.cr {
                throw WireError.quoting(.badChunk, "chunk data not followed by CRLF: ", prefix(input))
            }
            guard input.count >= 2 else { return .needMore }
            guard input[1] == ByteClass.lf else {
                throw WireError.quoting(.badChunk, "chunk data not followed by CRLF: ", prefix(input))
            }
            state = .chunkSize
            return .framing(2)

        case .chunkSize:
            guard let lineEnd = try findLine(input, code: .badChunk) else { return .needMore }
            let size = try ChunkLine.parseSize(UnsafeRawBufferPointer(rebasing: input[..<(lineEnd - 1)]))
            state = size == 0 ? .trailer : .chunkData(remaining: size)
            return .framing(lineEnd + 1)

        case .trailer:
            guard let lineEnd = try findLine(input, code: .badTrailer) else {
                // A partial line that can no longer fit is refused now. A lone CR is not: it may
                // begin the empty line that ends the section, which is never counted.
                let loneCR = input.count == 1 && input[0] == ByteClass.cr
                if !loneCR && trailerBytes + input.count > maxTrailerBytes {
                    throw WireError(.badTrailer, "trailer section longer than \(maxTrailerBytes) bytes")
                }
                return .needMore
            }
            if lineEnd == 1 {
                state = .done
                return .end(framing: 2)
            }
            trailerBytes += lineEnd + 1
            guard trailerBytes <= maxTrailerBytes else {
                throw WireError(.badTrailer, "trailer section longer than \(maxTrailerBytes) bytes")
            }
            do throws(WireError) {
                _ = try FieldLine.parse(UnsafeRawBufferPointer(rebasing: input[..<(lineEnd - 1)]))
            } catch {
                throw WireError(.badTrailer, "trailer field: \(error.description)")
            }
            return .framing(lineEnd + 1)
        }
    }

    /// The peer closed. Completes a close-delimited body; a length or chunked body that is not
    /// complete → `bodyTruncated`.
    /// Walks `buffered` (body bytes already received) with a copy of this decoder, consuming
    /// nothing, and throws the framing error those bytes already contain. Stops at the body's
    /// end (bytes after it belong to the next request) or where more input is needed. Lets the
    /// gateway refuse a malformed chunked body before any upstream connection is opened.
    public func precheck(_ buffered: UnsafeRawBufferPointer) throws(WireError) {
        var d = self
        var offset = 0
        while offset < buffered.count {
            let rest = UnsafeRawBufferPointer(rebasing: buffered[offset...])
            switch try d.next(rest, available: rest.count) {
            case .data(let n), .framing(let n): offset += n
            case .end, .needMore: return
            }
        }
    }

    public mutating func finishOnEOF() throws(WireError) {
        switch state {
        case .done:
            return
        case .closeDelimited:
            state = .done
        case .length(let remaining):
            throw WireError(.bodyTruncated, "connection closed with \(remaining) body bytes missing")
        case .chunkSize, .chunkData, .chunkDataEnd, .trailer:
            throw WireError(.bodyTruncated, "connection closed inside a chunked body")
        }
    }

    /// Payload bytes to hand out now, counted into `payloadBytes`.
    private mutating func take(_ remaining: UInt64, _ available: Int) -> Int {
        let n = remaining < UInt64(available) ? Int(remaining) : available
        payloadBytes &+= UInt64(n)
        return n
    }

    /// Index of the LF ending the line at the start of `input`, or nil if more bytes are needed.
    /// A bare CR or LF, or a line longer than `maxLineBytes`, throws `code`.
    private func findLine(_ input: UnsafeRawBufferPointer, code: WireError.Code) throws(WireError) -> Int? {
        let limit = min(input.count, BodyDecoder.maxLineBytes)
        var i = 0
        while i < limit {
            let b = input[i]
            if b == ByteClass.lf {
                guard i > 0 && input[i - 1] == ByteClass.cr else {
                    throw WireError(code, "LF without CR in chunked framing")
                }
                return i
            }
            if i > 0 && input[i - 1] == ByteClass.cr {
                throw WireError(code, "CR without LF in chunked framing")
            }
            i += 1
        }
        if limit == BodyDecoder.maxLineBytes {
            throw WireError(code, "chunked framing line longer than \(BodyDecoder.maxLineBytes) bytes")
        }
        return nil
    }

    private func prefix(_ input: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: input[..<min(input.count, 8)])
    }
}
