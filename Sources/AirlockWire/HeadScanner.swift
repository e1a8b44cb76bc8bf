/// Incremental end-of-head finder. Feed it the whole buffered bytes from the start of the message
/// each time more arrive; it resumes from where it stopped, so the total work is O(bytes).
///
/// It enforces only what can be decided early, so a hostile peer cannot make the caller buffer
/// more than the limits: the request-line limit (414), the head-size limit (431) and bare LF.
/// Everything else is `RequestParser`'s / `ResponseParser`'s job once the head is complete.
public struct HeadScanner: Sendable {
    private enum State: Sendable, Equatable {
        case startLine      // → fields once the first non-empty line ends, or → done
        case fields         // → done at the empty line
        case done           // final: the head length is `scanned`
    }

    // Widest first, so that no padding comes between them, and the state in one byte (every
    // client connection holds a scanner).
    private let limits: WireLimits
    /// Next index to examine.
    private var scanned = 0
    /// Index where the current line began.
    private var lineStart = 0
    private var state: State = .startLine
    private let kind: HeadKind

    /// The most bytes `scan` needs to be shown: one past the head-size limit, so that a head
    /// too long is told apart from one still arriving. (A request's one allowed leading CRLF
    /// counts toward the limit, so a request's window has a byte to spare: a head too long
    /// is refused at most that byte later.) A caller that shows fewer would wait forever on
    /// a peer that never ends its head.
    public var window: Int { limits.headerBytes + (kind == .request ? 2 : 1) }

    public init(kind: HeadKind, limits: WireLimits) {
        self.kind = kind
        self.limits = limits
    }

    /// Returns the head length including the final CRLF CRLF (and the one allowed leading CRLF for
    /// requests), or nil if more bytes are needed. Throws as soon as it can tell: no LF within
    /// `requestLineBytes` of the request line → 414; head longer than `headerBytes` → 431; a bare
    /// LF (LF not preceded by CR) → 400 `bareLF`. Once it has returned a length it keeps
    /// returning it until `reset()`.
    public mutating func scan(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Int? {
        if state == .done { return scanned }
        if bytes.count < scanned {
            // The caller handed us a different (shorter) buffer: start over rather than misread.
            reset()
        }
        let n = bytes.count
        let maxHead = limits.headerBytes
        let maxLine = limits.requestLineBytes
        let checksLine = kind == .request
        var i = scanned
        var inStartLine = state == .startLine
        defer { scanned = i }
        let end = min(n, maxHead)
        while true {
            // Tight search for the next LF; the limits are checked once per line, not per byte.
            i = ByteClass.index(of: ByteClass.lf, in: bytes, from: i, to: end)
            if checksLine && inStartLine && i - 1 - lineStart > maxLine {
                throw WireError(.requestLineTooLong, "request line longer than \(maxLine) bytes")
            }
            guard i < end else { break }
            guard i > 0 && bytes[i - 1] == ByteClass.cr else {
                throw WireError(.bareLF, "LF without CR at byte \(i)")
            }
            if i - 1 == lineStart {
                // An empty line. Before the start line, one leading CRLF is skipped for
                // requests; any other empty line ends the head (the parser rejects an empty
                // start line).
                i += 1
                if inStartLine && checksLine && lineStart == 0 {
                    lineStart = i
                    continue
                }
                state = .done
                return i   // and `scanned` (the defer)
            }
            if inStartLine {
                inStartLine = false
                state = .fields
            }
            i += 1
            lineStart = i
        }
        if n > maxHead {
            throw WireError(.headersTooLarge, "head longer than \(maxHead) bytes")
        }
        return nil
    }

    /// Forgets everything, ready for the next message.
    public mutating func reset() {
        state = .startLine
        scanned = 0
        lineStart = 0
    }

    /// True once `scan` has found the end of the head.
    public var isComplete: Bool {
        state == .done
    }
}
