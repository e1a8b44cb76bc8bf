/// The chunk-size line of the chunked coding (RFC 9112 section 7.1), without its CRLF:
///
///     chunk-size [ chunk-ext ]
///     chunk-size = 1*HEXDIG                         ; at most 16 digits here
///     chunk-ext  = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
///     ext-val    = token / quoted-string
///
/// Extensions are validated and ignored. Anything else is `badChunk`.
enum ChunkLine {
    /// Most hex digits in a chunk size: 16 always fits in UInt64.
    static let maxSizeDigits = 16

    static func parseSize(_ line: UnsafeRawBufferPointer) throws(WireError) -> UInt64 {
        let n = line.count
        var i = 0
        var size: UInt64 = 0
        while i < n && ByteClass.isHexDigit(line[i]) {
            guard i < maxSizeDigits else { throw WireError(.badChunk, "chunk size longer than \(maxSizeDigits) hex digits") }
            size = size << 4 | UInt64(ByteClass.hexValue(line[i]))
            i += 1
        }
        guard i > 0 else { throw WireError.quoting(.badChunk, "chunk size: ", line) }
        guard extensionsAreValid(line, from: i) else {
            throw WireError.quoting(.badChunk, "chunk line: ", line)
        }
        return size
    }

    /// Validates `*( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] )` up to the end.
    private static func extensionsAreValid(_ line: UnsafeRawBufferPointer, from start: Int) -> Bool {
        let n = line.count
        var i = start
        func skipBWS() {
            while i < n && ByteClass.isWhitespace(line[i]) { i += 1 }
        }
        func token() -> Bool {
            let s = i
            while i < n && ByteClass.isTchar(line[i]) { i += 1 }
            return i > s
        }
        /// DQUOTE *( qdtext / quoted-pair ) DQUOTE, starting at the opening quote.
        func quotedString() -> Bool {
            i += 1
            while i < n {
                let b = line[i]
                if b == ByteClass.dquote {
                    i += 1
                    return true
                }
                if b == ByteClass.backslash {
                    guard i + 1 < n, ByteClass.isFieldValueByte(line[i + 1]) else { return false }
                    i += 2
                    continue
                }
                guard ByteClass.isFieldValueByte(b) else { return false }
                i += 1
            }
            return false
        }
        while i < n {
            skipBWS()
            // Whitespace must lead to ";": "1 " and "1 x" are refused.
            guard i < n, line[i] == ByteClass.semicolon else { return false }
            i += 1
            skipBWS()
            guard token() else { return false }
            let afterName = i
            skipBWS()
            if i < n && line[i] == ByteClass.equals {
                i += 1
                skipBWS()
                guard i < n else { return false }
                if line[i] == ByteClass.dquote {
                    guard quotedString() else { return false }
                } else {
                    guard token() else { return false }
                }
            } else {
                i = afterName
            }
        }
        return true
    }
}
