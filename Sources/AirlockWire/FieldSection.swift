/// The field lines of a head, parsed into `HTTPHeaders` in one pass, together with the facts the
/// framing, Host and connection rules need, so that no field is scanned twice.
struct FieldSection {
    var headers = HTTPHeaders()

    /// The agreed Content-Length, once one was seen (all values must agree).
    var contentLength: UInt64?
    /// Number of Transfer-Encoding field lines.
    var transferEncodingFields = 0
    /// Non-empty transfer-coding list elements across all Transfer-Encoding fields.
    var transferCodings = 0
    /// How many of those were `chunked` (any case).
    var chunkedCodings = 0
    /// A Transfer-Encoding field held no coding at all.
    var emptyTransferEncoding = false
    /// Range (in the head) of the last Transfer-Encoding value, for error details.
    var transferEncodingValue: Range<Int> = 0..<0

    var hostFields = 0
    /// Range (in the head) of the first Host value.
    var hostValue: Range<Int> = 0..<0

    var connectionClose = false
    var connectionKeepAlive = false
    var expectContinue = false

    /// Longest Content-Length element: 19 digits always fits in UInt64.
    static let maxContentLengthDigits = 19

    /// Parses field lines from `start` up to and including the empty line, which must end `head`
    /// exactly. More than `maxCount` fields → `tooManyHeaders` (431).
    /// `reusing` donates its storage (see `HTTPHeaders.refill`); its fields are discarded.
    static func parse(_ head: UnsafeRawBufferPointer, from start: Int, maxCount: Int,
                      reusing: consuming HTTPHeaders = HTTPHeaders()) throws(WireError) -> FieldSection {
        var section = FieldSection()
        // Storage is one copy of the field block; fields are recorded by their offsets in it.
        section.headers = consume reusing
        section.headers.refill(parsedBlock: UnsafeRawBufferPointer(rebasing: head[start...]), fields: 16)
        var lineStart = start
        let n = head.count
        while true {
            // Fast path for a well-formed line, "name:value CRLF": the name is scanned for tchars
            // and the value a word at a time up to its CR, so each byte is looked at once. Any
            // other line (the empty line included) takes the full path below, which finds its
            // end and reports exactly what is wrong with it.
            var colon = lineStart
            while colon < n && ByteClass.isTchar(head[colon]) { colon += 1 }
            if colon > lineStart && colon < n && head[colon] == ByteClass.colon {
                let cr = ByteClass.firstNonFieldValueByte(head, from: colon + 1)
                if cr + 1 < n && head[cr] == ByteClass.cr && head[cr + 1] == ByteClass.lf {
                    guard section.headers.count < maxCount else {
                        throw WireError(.tooManyHeaders, "more than \(maxCount) fields")
                    }
                    let valueInHead = ByteClass.trimmed(head, colon + 1, cr)
                    let known = KnownField.classify(UnsafeRawBufferPointer(rebasing: head[lineStart..<colon]))
                    if known != .other {
                        try section.note(known, value: UnsafeRawBufferPointer(rebasing: head[valueInHead]), at: valueInHead)
                    }
                    section.headers.appendParsed(name: (lineStart - start)..<(colon - start),
                                                 value: (valueInHead.lowerBound - start)..<(valueInHead.upperBound - start),
                                                 known: known)
                    lineStart = cr + 2
                    continue
                }
            }
            guard let lf = try FieldLine.lineEnd(head, from: lineStart) else {
                throw WireError(.incompleteHead, "head does not end with an empty line")
            }
            let line = UnsafeRawBufferPointer(rebasing: head[lineStart..<(lf - 1)])
            if line.isEmpty {
                guard lf + 1 == head.count else {
                    throw WireError(.incompleteHead, "\(head.count - lf - 1) bytes after the head")
                }
                return section
            }
            guard section.headers.count < maxCount else {
                throw WireError(.tooManyHeaders, "more than \(maxCount) fields")
            }
            let parts = try FieldLine.parse(line)
            let name = UnsafeRawBufferPointer(rebasing: line[..<parts.nameEnd])
            let value = UnsafeRawBufferPointer(rebasing: line[parts.value])
            let known = KnownField.classify(name)
            let valueInHead = (lineStart + parts.value.lowerBound)..<(lineStart + parts.value.upperBound)
            try section.note(known, value: value, at: valueInHead)
            section.headers.appendParsed(name: (lineStart - start)..<(lineStart - start + parts.nameEnd),
                                         value: (valueInHead.lowerBound - start)..<(valueInHead.upperBound - start),
                                         known: known)
            lineStart = lf + 1
        }
    }

    /// Records what a field means for framing, Host and connection handling.
    private mutating func note(_ known: KnownField, value: UnsafeRawBufferPointer, at range: Range<Int>) throws(WireError) {
        switch known {
        case .contentLength:
            try noteContentLength(value)
        case .transferEncoding:
            transferEncodingFields += 1
            transferEncodingValue = range
            var codings = 0
            var chunked = 0
            _ = ByteClass.forEachListElement(value) { element in
                if !element.isEmpty {
                    codings += 1
                    if ByteClass.equalsLowercased(element, "chunked") { chunked += 1 }
                }
                return true
            }
            transferCodings += codings
            if codings == 0 { emptyTransferEncoding = true }
            chunkedCodings += chunked
        case .host:
            hostFields += 1
            if hostFields == 1 { hostValue = range }
        case .connection:
            _ = ByteClass.forEachListElement(value) { element in
                if ByteClass.equalsLowercased(element, "close") { connectionClose = true }
                if ByteClass.equalsLowercased(element, "keep-alive") { connectionKeepAlive = true }
                return true
            }
        case .expect:
            if ByteClass.equalsLowercased(value, "100-continue") { expectContinue = true }
        default:
            break
        }
    }

    /// `Content-Length = 1*DIGIT`, possibly repeated as a list or in several fields; every
    /// element must be 1–19 digits and all must be equal.
    private mutating func noteContentLength(_ value: UnsafeRawBufferPointer) throws(WireError) {
        var agreed = contentLength
        var bad = false
        _ = ByteClass.forEachListElement(value) { element in
            guard !element.isEmpty, element.count <= FieldSection.maxContentLengthDigits else {
                bad = true
                return false
            }
            var n: UInt64 = 0
            for b in element {
                guard ByteClass.isDigit(b) else {
                    bad = true
                    return false
                }
                n = n * 10 + UInt64(b &- 0x30)
            }
            if let previous = agreed, previous != n {
                bad = true
                return false
            }
            agreed = n
            return true
        }
        if bad { throw WireError.quoting(.badContentLength, "Content-Length: ", value) }
        contentLength = agreed
    }

    /// The framing the headers declare, or nil when they declare none.
    ///
    /// Transfer-Encoding with Content-Length → `conflictingFraming`; Transfer-Encoding in an
    /// HTTP/1.0 message → `transferEncodingInHTTP10` (RFC 9112 6.1: faulty framing); anything
    /// but a single `chunked` → `unsupportedTransferCoding` (501).
    func declaredFraming(version: HTTPVersion, head: UnsafeRawBufferPointer) throws(WireError) -> BodyFraming? {
        if transferEncodingFields > 0 {
            guard contentLength == nil else {
                throw WireError(.conflictingFraming, "both Content-Length and Transfer-Encoding")
            }
            guard version == .http11 else {
                throw WireError(.transferEncodingInHTTP10, "Transfer-Encoding in an HTTP/1.0 message")
            }
            guard transferCodings == 1 && chunkedCodings == 1 && !emptyTransferEncoding else {
                throw WireError.quoting(
                    .unsupportedTransferCoding, "Transfer-Encoding: ",
                    UnsafeRawBufferPointer(rebasing: head[transferEncodingValue])
                )
            }
            return .chunked
        }
        if let n = contentLength { return .length(n) }
        return nil
    }

    /// Keep-alive per RFC 9112 9.3: HTTP/1.1 unless `close`; HTTP/1.0 only with `keep-alive`.
    func keepAlive(version: HTTPVersion) -> Bool {
        if connectionClose { return false }
        return version == .http11 || connectionKeepAlive
    }
}
