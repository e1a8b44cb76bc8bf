/// Byte classes from RFC 9110 / RFC 3986, as switch-based predicates the optimiser folds into
/// range checks. Internal: the parsers' only vocabulary for "is this byte allowed here".
enum ByteClass {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B
    static let equals: UInt8 = 0x3D
    static let dquote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    @inline(__always)
    static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) &- 0x61 < 26 }

    @inline(__always)
    static func isHexDigit(_ b: UInt8) -> Bool { isDigit(b) || (b | 0x20) &- 0x61 < 6 }

    /// Value of a hex digit; only meaningful when `isHexDigit(b)`.
    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt8 { isDigit(b) ? b &- 0x30 : (b | 0x20) &- 0x61 &+ 10 }

    /// SP or HTAB (RFC 9110 OWS/BWS/RWS).
    @inline(__always)
    static func isWhitespace(_ b: UInt8) -> Bool { b == sp || b == htab }

    /// ASCII letter to lower case; other bytes unchanged.
    @inline(__always)
    static func lower(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }

    /// RFC 9110 tchar: `!#$%&'*+-.^_`|~`, DIGIT, ALPHA.
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
        default: false
        }
    }

    /// RFC 9110 field-vchar plus SP/HTAB: what a field value may contain (obs-text included).
    @inline(__always)
    static func isFieldValueByte(_ b: UInt8) -> Bool { b >= 0x20 ? b != 0x7F : b == htab }

    /// RFC 3986 unreserved: ALPHA DIGIT `-._~`.
    @inline(__always)
    static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: true
        default: false
        }
    }

    /// RFC 3986 sub-delims: `!$&'()*+,;=`.
    @inline(__always)
    static func isSubDelim(_ b: UInt8) -> Bool {
        switch b {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: true
        default: false
        }
    }

    /// Bytes allowed literally in a path or query: pchar (minus `%`) plus `/` and `?`.
    @inline(__always)
    static func isPathOrQueryByte(_ b: UInt8) -> Bool {
        isUnreserved(b) || isSubDelim(b) || b == colon || b == 0x40 || b == 0x2F || b == 0x3F
    }

    /// `bytes` as a String with ASCII letters lower-cased, built in one allocation.
    static func lowercasedString(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { out in
            for i in 0..<bytes.count { out[i] = lower(bytes[i]) }
            return bytes.count
        }
    }

    /// Compares `bytes` with lower-case ASCII `lowered`, folding the case of `bytes`.
    static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowered: StaticString) -> Bool {
        guard bytes.count == lowered.utf8CodeUnitCount else { return false }
        let p = lowered.utf8Start
        for i in 0..<bytes.count where lower(bytes[i]) != p[i] {
            return false
        }
        return true
    }

    /// Case-insensitive comparison of two byte runs.
    static func equalsIgnoringCase(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where lower(a[i]) != lower(b[i]) {
            return false
        }
        return true
    }

    /// Index range of `bytes[start..<end]` with leading and trailing SP/HTAB removed.
    @inline(__always)
    static func trimmed(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Range<Int> {
        var s = start
        var e = end
        while s < e && isWhitespace(bytes[s]) { s += 1 }
        while e > s && isWhitespace(bytes[e - 1]) { e -= 1 }
        return s..<e
    }

    /// Calls `body` with each comma-separated element of `bytes`, OWS-trimmed (empty ones included).
    /// Stops early and returns false if `body` does.
    @inline(__always)
    static func forEachListElement(
        _ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Bool
    ) -> Bool {
        var start = 0
        var i = 0
        while i <= bytes.count {
            if i == bytes.count || bytes[i] == comma {
                let r = trimmed(bytes, start, i)
                if !body(UnsafeRawBufferPointer(rebasing: bytes[r])) { return false }
                start = i + 1
            }
            i += 1
        }
        return true
    }
}
