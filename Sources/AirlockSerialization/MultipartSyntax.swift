import AirlockWire

/// Byte classes and the `value *( ";" name "=" value )` shape shared by a multipart body's
/// Content-Type (`MultipartBoundary`) and each part's Content-Disposition (`MultipartValidator`),
/// over AirlockWire's `ByteClass`.
/// Internal; bytes in, ranges and byte arrays out, no `String` per byte.
enum MultipartSyntax {
    // CR, LF, SP, HTAB, `:`, `;`, `=`, DQUOTE, backslash, whitespace, tchar and lower-casing are
    // AirlockWire's `ByteClass`; only the multipart-specific classes are here.
    static let dash: UInt8 = 0x2D
    static let slash: UInt8 = 0x2F

    /// RFC 2046 §5.1.1 bcharsnospace: DIGIT, ALPHA, `'()+_,-./:=?`.
    @inline(__always)
    static func isBcharNoSpace(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x27, 0x28, 0x29, 0x2B, 0x5F, 0x2C, 0x2D, 0x2E, 0x2F, 0x3A, 0x3D, 0x3F: true
        default: false
        }
    }

    /// A byte of `type/subtype`: a tchar or `/`.
    @inline(__always)
    static func isMediaTypeByte(_ b: UInt8) -> Bool { ByteClass.isTchar(b) || b == slash }

    /// A control byte that may not appear in a field value (everything below SP but HTAB, and DEL).
    @inline(__always)
    static func isControl(_ b: UInt8) -> Bool { (b < ByteClass.sp && b != ByteClass.htab) || b == 0x7F }

    /// True when `bytes[range]` equals the lower-case ASCII `lowercase`, ignoring case.
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString)
        -> Bool
    {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for (k, i) in range.enumerated() where ByteClass.lower(bytes[i]) != expected[k] { return false }
        return true
    }

    /// A header value split into its leading item (a media type `type/subtype` or a disposition
    /// type) and its parameters, values unquoted.
    struct Parameterized {
        var item: Range<Int>
        var parameters: [(name: Range<Int>, value: [UInt8])]

        /// The value of the first parameter called `lowercase` (case-insensitive), and whether
        /// another parameter has the same name.
        func parameter(_ lowercase: StaticString, in bytes: UnsafeRawBufferPointer)
            -> (value: [UInt8], repeated: Bool)?
        {
            let named = parameters.lazy.filter { equalsIgnoringCase(bytes, $0.name, lowercase) }
            guard let first = named.first else { return nil }
            return (first.value, named.dropFirst().first != nil)
        }
    }

    /// `OWS item OWS *( ";" OWS [ name OWS "=" OWS ( token / quoted-string ) ] OWS )` where item
    /// is one or more tchars or `/` (RFC 9110 §5.6.6, with its empty parameters); nil when
    /// `bytes` has another shape.
    static func parameterized(_ bytes: UnsafeRawBufferPointer) -> Parameterized? {
        let n = bytes.count
        var i = 0
        skipWhitespace(bytes, &i)
        let itemStart = i
        while i < n && isMediaTypeByte(bytes[i]) { i += 1 }
        guard i > itemStart else { return nil }
        var result = Parameterized(item: itemStart..<i, parameters: [])
        skipWhitespace(bytes, &i)
        while i < n {
            guard bytes[i] == ByteClass.semicolon else { return nil }
            i += 1
            skipWhitespace(bytes, &i)
            if i == n || bytes[i] == ByteClass.semicolon { continue }
            let nameStart = i
            while i < n && ByteClass.isTchar(bytes[i]) { i += 1 }
            guard i > nameStart else { return nil }
            let name = nameStart..<i
            skipWhitespace(bytes, &i)
            guard i < n && bytes[i] == ByteClass.equals else { return nil }
            i += 1
            skipWhitespace(bytes, &i)
            guard let value = parameterValue(bytes, &i) else { return nil }
            result.parameters.append((name, value))
            skipWhitespace(bytes, &i)
        }
        return result
    }

    /// A token or a quoted-string (unescaped) at `i`, advancing past it.
    private static func parameterValue(_ bytes: UnsafeRawBufferPointer, _ i: inout Int) -> [UInt8]? {
        let n = bytes.count
        guard i < n else { return nil }
        if bytes[i] != ByteClass.dquote {
            let start = i
            while i < n && ByteClass.isTchar(bytes[i]) { i += 1 }
            return i > start ? Array(bytes[start..<i]) : nil
        }
        i += 1
        var value: [UInt8] = []
        while i < n {
            let b = bytes[i]
            if b == ByteClass.dquote {
                i += 1
                return value
            }
            if isControl(b) { return nil }
            if b == ByteClass.backslash {
                i += 1
                guard i < n, !isControl(bytes[i]) else { return nil }
            }
            value.append(bytes[i])
            i += 1
        }
        return nil  // no closing quote
    }

    private static func skipWhitespace(_ bytes: UnsafeRawBufferPointer, _ i: inout Int) {
        while i < bytes.count && ByteClass.isWhitespace(bytes[i]) { i += 1 }
    }
}
