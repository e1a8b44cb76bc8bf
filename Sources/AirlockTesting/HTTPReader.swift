/// Buffered reading of HTTP/1.1 messages from one socket. Used by one thread at a time.
/// Every read is bounded by `deadline`, by `waker`, or both; bytes are consumed from the buffer only
/// when a piece is complete, so what the peer pipelined stays for the next message.
final class HTTPReader {
    let fd: Int32
    let waker: Waker?
    var deadline: Deadline?
    /// The peer reset the connection (ECONNRESET); it is otherwise treated as end of stream.
    private(set) var sawReset = false
    private(set) var sawEndOfStream = false

    private var buffer: [UInt8] = []
    private var start = 0
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
    private var capture: [UInt8]?

    static let headLimit = 1 << 20
    static let lineLimit = 64 << 10

    init(fd: Int32, waker: Waker?) {
        self.fd = fd
        self.waker = waker
    }

    deinit {
        scratch.deallocate()
    }

    var bufferedCount: Int { buffer.count - start }

    // MARK: Raw bytes

    /// Reads once more from the socket, at most `maximum` bytes. Returns false at end of stream.
    @discardableResult
    func fill(maximum: Int = 65_536) throws -> Bool {
        if sawEndOfStream { return false }
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        switch try Socket.receive(fd, into: scratch, maximum: maximum, waker: waker, deadline: deadline) {
        case .bytes(let count):
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
            return true
        case .endOfStream:
            sawEndOfStream = true
            return false
        case .reset:
            sawReset = true
            sawEndOfStream = true
            return false
        }
    }

    /// Takes up to `maximum` buffered bytes.
    func take(upTo maximum: Int) -> [UInt8] {
        consume(min(maximum, bufferedCount))
    }

    /// Starts recording every consumed byte (for `RawResponse.raw`).
    func beginCapture() { capture = [] }

    func endCapture() -> [UInt8] {
        defer { capture = nil }
        return capture ?? []
    }

    private func consume(_ count: Int) -> [UInt8] {
        let bytes = Array(buffer[start..<(start + count)])
        start += count
        capture?.append(contentsOf: bytes)
        return bytes
    }

    // MARK: Pieces of a message

    /// Reads through the blank line that ends a head. Returns nil on a clean end of stream before any byte.
    /// Empty lines before a start line are skipped (RFC 9112 §2.2).
    func readHead() throws -> [UInt8]? {
        var scanned = 0  // bytes after `start` already searched; relative because `fill` may compact
        while true {
            while bufferedCount > 0, buffer[start] == UInt8(ascii: "\r") || buffer[start] == UInt8(ascii: "\n") {
                if buffer[start] == UInt8(ascii: "\r"), bufferedCount < 2 { break }
                _ = consume(1)
                scanned = 0
            }
            if let end = headEnd(from: start + scanned) {
                return consume(end - start)
            }
            scanned = max(0, bufferedCount - 3)
            guard bufferedCount <= Self.headLimit else {
                throw AirlockTestingError(.malformed, "head longer than \(Self.headLimit) bytes")
            }
            guard try fill() else {
                if bufferedCount == 0 { return nil }
                throw AirlockTestingError(.closed, "peer closed inside a head after \(bufferedCount) bytes: \(preview())")
            }
        }
    }

    /// Index just past the LF LF or LF CR LF that ends the head.
    private func headEnd(from: Int) -> Int? {
        var index = max(from, start)
        while index < buffer.count {
            if buffer[index] == UInt8(ascii: "\n") {
                if index + 1 < buffer.count, buffer[index + 1] == UInt8(ascii: "\n") { return index + 2 }
                if index + 2 < buffer.count, buffer[index + 1] == UInt8(ascii: "\r"), buffer[index + 2] == UInt8(ascii: "\n") {
                    return index + 3
                }
            }
            index += 1
        }
        return nil
    }

    /// One line without its CRLF (or bare LF).
    func readLine() throws -> [UInt8] {
        var scanned = 0  // relative to `start`, because `fill` may compact
        while true {
            if let newline = buffer[(start + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = consume(newline + 1 - start)
                line.removeLast()
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return line
            }
            scanned = bufferedCount
            guard bufferedCount <= Self.lineLimit else {
                throw AirlockTestingError(.malformed, "line longer than \(Self.lineLimit) bytes")
            }
            guard try fill() else { throw AirlockTestingError(.closed, "peer closed inside a line") }
        }
    }

    func readExactly(_ count: Int) throws -> [UInt8] {
        while bufferedCount < count {
            guard try fill() else {
                throw AirlockTestingError(.closed, "peer closed after \(bufferedCount) of \(count) body bytes")
            }
        }
        return consume(count)
    }

    func readToEnd() throws -> [UInt8] {
        while try fill() {}
        return consume(bufferedCount)
    }

    /// A chunked body: the decoded bytes and the trailer fields.
    func readChunked() throws -> (body: [UInt8], trailers: [(name: String, value: String)]) {
        var body: [UInt8] = []
        while true {
            let line = String(decoding: try readLine(), as: UTF8.self)
            let sizeText = trimmed(line.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            guard !sizeText.isEmpty, sizeText.count <= 16, let size = Int(sizeText, radix: 16), size >= 0 else {
                throw AirlockTestingError(.malformed, "bad chunk size line: \(line.debugDescription)")
            }
            if size == 0 { break }
            body += try readExactly(size)
            guard try readLine().isEmpty else {
                throw AirlockTestingError(.malformed, "chunk of \(size) bytes not followed by CRLF")
            }
        }
        var trailerLines: [UInt8] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            trailerLines += line + [UInt8(ascii: "\r"), UInt8(ascii: "\n")]
        }
        let trailers = trailerLines.isEmpty ? [] : try HTTPHead.parse(Array("x\r\n".utf8) + trailerLines).headers
        return (body, trailers)
    }

    /// The first bytes still buffered, for error messages.
    func preview(_ limit: Int = 200) -> String {
        String(decoding: buffer[start..<min(buffer.count, start + limit)], as: UTF8.self).debugDescription
    }
}
