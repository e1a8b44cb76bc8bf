/// Validation of one field line (RFC 9112 section 5), shared by heads and chunked trailers.
///
///     field-line = field-name ":" OWS field-value OWS
///
/// Refused: obs-fold (a line starting with SP/HTAB), whitespace between name and colon, an empty
/// or non-token name, a line without a colon, and any CTL other than HTAB in the value (bare CR
/// reported as such). obs-text (0x80–0xFF) is allowed in values.
enum FieldLine {
    struct Parts {
        /// Name is `line[0..<nameEnd]`.
        var nameEnd: Int
        /// OWS-trimmed value range within the line.
        var value: Range<Int>
    }

    /// `line` is the field line without its CRLF, and is not empty.
    static func parse(_ line: UnsafeRawBufferPointer) throws(WireError) -> Parts {
        let n = line.count
        if ByteClass.isWhitespace(line[0]) {
            throw WireError.quoting(.obsFold, "line folding: ", line)
        }
        var i = 0
        while i < n && ByteClass.isTchar(line[i]) { i += 1 }
        guard i < n else { throw WireError.quoting(.missingColon, "no colon: ", line) }

        let stop = line[i]
        if stop != ByteClass.colon {
            if stop == ByteClass.cr { throw WireError.quoting(.bareCR, "CR in field name: ", line) }
            if ByteClass.isWhitespace(stop) {
                var j = i
                while j < n && ByteClass.isWhitespace(line[j]) { j += 1 }
                if j < n && line[j] == ByteClass.colon {
                    throw WireError.quoting(.whitespaceBeforeColon, "space before colon: ", line)
                }
            }
            if line[i...].contains(ByteClass.colon) {
                throw WireError.quoting(.badHeaderName, "field name: ", line)
            }
            throw WireError.quoting(.missingColon, "no colon: ", line)
        }
        guard i > 0 else { throw WireError.quoting(.badHeaderName, "empty field name: ", line) }

        var k = i + 1
        while k < n {
            let b = line[k]
            if !ByteClass.isFieldValueByte(b) {
                if b == ByteClass.cr { throw WireError.quoting(.bareCR, "CR in field value: ", line) }
                throw WireError.quoting(.badHeaderValue, "control byte in field value: ", line)
            }
            k += 1
        }
        return Parts(nameEnd: i, value: ByteClass.trimmed(line, i + 1, n))
    }

    /// Finds the LF ending the line that starts at `start`; nil if none. The byte before it must
    /// be CR: otherwise `bareLF` is thrown.
    @inline(__always)
    static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(WireError) -> Int? {
        var i = start
        let n = bytes.count
        while i < n && bytes[i] != ByteClass.lf { i += 1 }
        guard i < n else { return nil }
        guard i > start && bytes[i - 1] == ByteClass.cr else {
            throw WireError(.bareLF, "LF without CR at byte \(i)")
        }
        return i
    }
}
