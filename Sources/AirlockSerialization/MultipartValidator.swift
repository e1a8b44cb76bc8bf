import AirlockWire

/// Checks a `multipart/form-data` body while it streams (RFC 2046 §5.1.1, RFC 7578), so that the
/// relay can abort a broken body before its last byte reaches the upstream.
///
/// Grammar, byte by byte:
/// - An optional preamble, then `--boundary` (at the start of the body, or after a CRLF).
/// - After each `--boundary`: `--` closes the body (`.complete`; whatever follows, the epilogue, is
///   ignored), or optional transport padding (SP, HTAB) then CRLF starts a part. Anything else is
///   `multipart-bad-delimiter`.
/// - A part: header lines `name: value` CRLF (name a token, value without control bytes; no
///   obsolete folding), an empty line, then content up to the next `CRLF--boundary`. Content is
///   never buffered and may hold any byte, including CR, LF and the boundary without a CRLF before it.
/// - Every part has one `Content-Disposition: form-data; name=…` (RFC 7578 §4.2).
/// - Outside content every line ends in CRLF: a bare LF, or a CR without LF, is
///   `multipart-bad-line-ending`.
/// - A body that ends (`finish()`) before the close delimiter is `multipart-truncated`.
/// - Zero parts (`--boundary--` alone) is accepted: browsers send it for an empty form.
///
/// Memory is bounded whatever the input: the boundary, a few counters, and the value of the part's
/// Content-Disposition line (within `Limits.maxHeaderBytes`). A delimiter split across feeds needs
/// no copy: since no boundary byte is CR, the count of delimiter bytes matched so far says which
/// bytes they were.
///
/// The verdict is sticky: once `.complete` or `.invalid`, later feeds return it again and read nothing.
/// See `holdback` for what the relay may forward before the verdict is `.complete`.
public struct MultipartValidator: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Most parts a body may hold.
        public var maxParts: Int
        /// Most header bytes (every header line with its CRLF, and the empty line) per part.
        public var maxHeaderBytes: Int

        public init(maxParts: Int = 1_000, maxHeaderBytes: Int = 8_192) {
            self.maxParts = maxParts
            self.maxHeaderBytes = maxHeaderBytes
        }
    }

    public enum Verdict: Sendable, Equatable {
        /// Valid so far; feed more.
        case needMore
        /// The close delimiter was seen; the rest of the body is epilogue.
        case complete
        /// Broken; the relay aborts the upstream request.
        case invalid(MultipartError)
    }

    private enum State: Sendable {
        case content            // preamble or part content, `matched` delimiter bytes seen → .delimiter
        case delimiter          // `CRLF--boundary` seen → .closeDash, .padding, .delimiterCR
        case closeDash          // `-` after the delimiter → .complete
        case padding            // SP/HTAB after the delimiter → .delimiterCR
        case delimiterCR        // → .headerLineStart (a new part)
        case headerLineStart    // → .headerName, .headersEndCR
        case headerName         // → .headerValue at ':'
        case headerValue        // → .headerCR
        case headerCR           // → .headerLineStart
        case headersEndCR       // → .content
        case complete           // final
        case invalid(MultipartError)  // final
    }

    /// `CRLF--boundary`: every delimiter; the first may stand at the body's start without the CRLF.
    private let delimiter: [UInt8]
    private let limits: Limits
    private var state: State = .content
    /// Bytes of `delimiter` matched so far in `.content`. Starts at 2, as if a CRLF preceded the body.
    private var matched = 2
    /// Bytes fed so far.
    private var fed = 0
    private var parts = 0
    private var headerBytes = 0
    /// Bytes of `content-disposition` matched in the current header name; -1 once it differs.
    private var nameMatched = 0
    private var inDisposition = false
    private var sawDisposition = false
    private var disposition: [UInt8] = []

    public init(boundary: MultipartBoundary, limits: Limits = Limits()) {
        self.delimiter = [ByteClass.cr, ByteClass.lf, MultipartSyntax.dash, MultipartSyntax.dash]
            + boundary.bytes
        self.limits = limits
    }

    /// The verdict so far, without feeding.
    public var verdict: Verdict {
        switch state {
        case .complete: .complete
        case .invalid(let error): .invalid(error)
        default: .needMore
        }
    }

    /// Reads the next bytes of the body.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        let base = fed
        fed += bytes.count
        switch state {
        case .complete, .invalid: return verdict
        default: break
        }
        var i = 0
        let n = bytes.count
        while i < n {
            if case .content = state {
                i = scanContent(bytes, from: i)
                continue
            }
            step(bytes[i], at: base + i)
            i += 1
            switch state {
            case .complete, .invalid: return verdict
            default: continue
            }
        }
        return verdict
    }

    /// The end of the body: `.complete` if the close delimiter was seen, else invalid.
    public mutating func finish() -> Verdict {
        switch state {
        case .complete, .invalid: break
        default: state = .invalid(.truncated(after: fed))
        }
        return verdict
    }

    /// How many of the last bytes fed the relay must not forward yet. The rule for the relay:
    /// feed each chunk first, then
    /// - `.needMore`: forward everything fed except the last `holdback` bytes (`forwardable` in
    ///   all); this count never decreases from one feed to the next;
    /// - `.complete`: forward the rest (`holdback` is 0), and later chunks as they come;
    /// - `.invalid`: forward nothing more and abort the upstream request (`holdback` is every
    ///   byte fed, so `forwardable` is 0).
    ///
    /// While `.needMore`, the bytes held back are those of a delimiter that may be the close
    /// delimiter (`CRLF--boundary`, then its first `-`), and at least one byte. So no byte of the
    /// close delimiter goes upstream before the validator says `.complete`, and a truncated body
    /// never reaches the upstream whole: at `finish()` its last byte at least is still held.
    public var holdback: Int {
        let pending: Int
        switch state {
        case .complete: return 0
        case .invalid: return fed
        case .content: pending = max(1, matched)
        case .delimiter: pending = delimiter.count
        case .closeDash: pending = delimiter.count + 1
        default: pending = 1
        }
        // At the body's start `matched` counts the CRLF it lets the first delimiter do without.
        return min(fed, pending)
    }

    /// How many bytes, from the body's first, the relay may have forwarded by now: everything
    /// fed but the `holdback`.
    public var forwardable: Int { fed - holdback }

    /// In `.content`: matches `delimiter` from `i`, skipping to the next CR while nothing is
    /// matched. Returns where it stopped: the end of `bytes`, or just after a whole delimiter.
    private mutating func scanContent(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = bytes.count
        var matched = self.matched
        defer { self.matched = matched }
        return delimiter.withUnsafeBufferPointer { pattern in
            while i < n {
                if matched == 0 {
                    while i < n && bytes[i] != ByteClass.cr { i += 1 }
                    guard i < n else { break }
                }
                let b = bytes[i]
                i += 1
                if b == pattern[matched] {
                    matched += 1
                    if matched == pattern.count {
                        matched = 0
                        state = .delimiter
                        return i
                    }
                } else {
                    // No boundary byte is CR, so a mismatch restarts the match at this byte.
                    matched = b == ByteClass.cr ? 1 : 0
                }
            }
            return i
        }
    }

    /// One byte outside content, at body offset `offset`.
    private mutating func step(_ b: UInt8, at offset: Int) {
        switch state {
        case .delimiter:
            if b == MultipartSyntax.dash {
                state = .closeDash
            } else {
                afterDelimiter(b, at: offset)
            }
        case .closeDash:
            state = b == MultipartSyntax.dash ? .complete : .invalid(.badDelimiter(at: offset))
        case .padding:
            afterDelimiter(b, at: offset)
        case .delimiterCR:
            guard b == ByteClass.lf else { return state = .invalid(.badLineEnding(at: offset)) }
            parts += 1
            guard parts <= limits.maxParts else { return state = .invalid(.tooManyParts(limit: limits.maxParts)) }
            headerBytes = 0
            sawDisposition = false
            state = .headerLineStart
        case .headerLineStart, .headerName, .headerValue, .headerCR, .headersEndCR:
            headerBytes += 1
            guard headerBytes <= limits.maxHeaderBytes else {
                return state = .invalid(.headersTooLarge(part: parts, limit: limits.maxHeaderBytes))
            }
            header(b, at: offset)
        case .content, .complete, .invalid:
            break
        }
    }

    /// Padding or CRLF after a delimiter that is not the close delimiter.
    private mutating func afterDelimiter(_ b: UInt8, at offset: Int) {
        if ByteClass.isWhitespace(b) {
            state = .padding
        } else if b == ByteClass.cr {
            state = .delimiterCR
        } else if b == ByteClass.lf {
            state = .invalid(.badLineEnding(at: offset))
        } else {
            state = .invalid(.badDelimiter(at: offset))
        }
    }

    // MARK: - Part headers

    private static let dispositionName: StaticString = "content-disposition"

    /// One byte of a part's header section (its count already checked against the limit).
    private mutating func header(_ b: UInt8, at offset: Int) {
        switch state {
        case .headerLineStart:
            if b == ByteClass.cr {
                state = .headersEndCR
            } else if b == ByteClass.lf {
                state = .invalid(.badLineEnding(at: offset))
            } else if ByteClass.isWhitespace(b) {
                state = .invalid(.badHeader("line is folded", at: offset))
            } else if ByteClass.isTchar(b) {
                nameMatched = 0
                matchName(b)
                state = .headerName
            } else {
                state = .invalid(.badHeader("name is not a token", at: offset))
            }
        case .headerName:
            if ByteClass.isTchar(b) {
                matchName(b)
            } else if b == ByteClass.colon {
                if nameMatched == Self.dispositionName.utf8CodeUnitCount {
                    guard !sawDisposition else {
                        return state = .invalid(.badDisposition("is given twice", part: parts, at: offset))
                    }
                    inDisposition = true
                    disposition.removeAll(keepingCapacity: true)
                }
                state = .headerValue
            } else if b == ByteClass.cr || b == ByteClass.lf {
                state = .invalid(.badHeader("line has no colon", at: offset))
            } else {
                state = .invalid(.badHeader("name is not a token", at: offset))
            }
        case .headerValue:
            if b == ByteClass.cr {
                state = .headerCR
            } else if b == ByteClass.lf {
                state = .invalid(.badLineEnding(at: offset))
            } else if MultipartSyntax.isControl(b) {
                state = .invalid(.badHeader("value has a control byte", at: offset))
            } else if inDisposition {
                disposition.append(b)
            }
        case .headerCR:
            guard b == ByteClass.lf else { return state = .invalid(.badLineEnding(at: offset)) }
            state = .headerLineStart
            if inDisposition {
                inDisposition = false
                sawDisposition = true
                if let why = Self.dispositionProblem(disposition) {
                    state = .invalid(.badDisposition(why, part: parts, at: offset))
                }
            }
        case .headersEndCR:
            guard b == ByteClass.lf else { return state = .invalid(.badLineEnding(at: offset)) }
            guard sawDisposition else { return state = .invalid(.noDisposition(part: parts, at: offset)) }
            matched = 0
            state = .content
        default:
            break
        }
    }

    /// Advances the case-insensitive match of the header name against `content-disposition`.
    private mutating func matchName(_ b: UInt8) {
        let name = Self.dispositionName
        if nameMatched >= 0 && nameMatched < name.utf8CodeUnitCount
            && ByteClass.lower(b) == name.utf8Start[nameMatched]
        {
            nameMatched += 1
        } else {
            nameMatched = -1
        }
    }

    /// Why a Content-Disposition value is not `form-data; name=…` (RFC 7578 §4.2), or nil.
    private static func dispositionProblem(_ value: [UInt8]) -> String? {
        value.withUnsafeBytes { bytes in
            guard let parsed = MultipartSyntax.parameterized(bytes) else { return "is malformed" }
            guard MultipartSyntax.equalsIgnoringCase(bytes, parsed.item, "form-data") else { return "is not form-data" }
            guard let (_, repeated) = parsed.parameter("name", in: bytes) else { return "has no name" }
            return repeated ? "has two names" : nil
        }
    }
}
