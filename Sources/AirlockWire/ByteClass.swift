/// Byte classes from RFC 9110 / RFC 3986, as switch-based predicates the optimiser folds into
/// range checks: the parsers' only vocabulary for "is this byte allowed here". The constants and
/// the predicates other modules' byte scanners share (AirlockSerialization's multipart syntax)
/// are public and `@inlinable`, so they fold there as they do here.
public enum ByteClass {
    /// Raw bytes as `UInt8`s: an array appends those with one copy (a raw buffer, byte by byte).
    @inlinable @inline(__always)
    public static func typed(_ bytes: UnsafeRawBufferPointer) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }

    public static let cr: UInt8 = 0x0D
    public static let lf: UInt8 = 0x0A
    public static let sp: UInt8 = 0x20
    public static let htab: UInt8 = 0x09
    public static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    public static let semicolon: UInt8 = 0x3B
    public static let equals: UInt8 = 0x3D
    public static let dquote: UInt8 = 0x22
    public static let backslash: UInt8 = 0x5C

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
    @inlinable @inline(__always)
    public static func isWhitespace(_ b: UInt8) -> Bool { b == sp || b == htab }

    /// ASCII letter to lower case; other bytes unchanged.
    @inlinable @inline(__always)
    public static func lower(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }

    /// RFC 9110 tchar: `!#$%&'*+-.^_`|~`, DIGIT, ALPHA. One bit per byte value below 128 (no
    /// tchar is above): `tcharLow` for 0x00–0x3F, `tcharHigh` for 0x40–0x7F.
    @inlinable @inline(__always)
    public static func isTchar(_ b: UInt8) -> Bool {
        let mask = b < 64 ? tcharLow : (b < 128 ? tcharHigh : 0)
        return (mask >> UInt64(b & 63)) & 1 != 0
    }

    /// `! # $ % & ' * + - .` and `0`–`9`.
    @usableFromInline static let tcharLow: UInt64 = (1 << 0x21) | (1 << 0x23) | (1 << 0x24) | (1 << 0x25) | (1 << 0x26)
        | (1 << 0x27) | (1 << 0x2A) | (1 << 0x2B) | (1 << 0x2D) | (1 << 0x2E) | (0x3FF << 0x30)
    /// `A`–`Z`, `^ _ \``, `a`–`z`, `|`, `~` (bit k is byte 0x40 + k).
    @usableFromInline static let tcharHigh: UInt64 = (0x3FFFFFF << 1) | (1 << 0x1E) | (1 << 0x1F) | (1 << 0x20)
        | (0x3FFFFFF << 0x21) | (1 << 0x3C) | (1 << 0x3E)

    /// True when every byte is a tchar (a valid, non-empty field name or method has only these).
    @inline(__always)
    static func allTchar(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < bytes.count && isTchar(bytes[i]) { i += 1 }
        return i == bytes.count
    }

    // Word-at-a-time scans (SWAR): eight bytes per step with exact "is any byte ..." tests,
    // then a byte loop where a word had a hit. Loads are unaligned; byte order does not matter.
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Some byte of `w` is below `n` (n ≤ 128).
    @inline(__always)
    static func anyByteBelow(_ w: UInt64, _ n: UInt8) -> Bool {
        (w &- ones &* UInt64(n)) & ~w & highs != 0
    }

    /// Some byte of `w` equals `b`.
    @inline(__always)
    static func anyByteEqual(_ w: UInt64, _ b: UInt8) -> Bool {
        let x = w ^ (ones &* UInt64(b))
        return (x &- ones) & ~x & highs != 0
    }

    /// Index of the first `byte` in `bytes[start..<end]`, or `end` if there is none.
    @inline(__always)
    static func index(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var i = start
        if let base = bytes.baseAddress {
            while i + 8 <= end && !anyByteEqual(base.loadUnaligned(fromByteOffset: i, as: UInt64.self), byte) {
                i += 8
            }
        }
        while i < end && bytes[i] != byte { i += 1 }
        return i
    }

    /// Index of the first byte at or after `start` that may not appear in a field value (a CTL
    /// other than HTAB, or DEL: see `isFieldValueByte`), or `bytes.count` if there is none.
    @inline(__always)
    static func firstNonFieldValueByte(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = bytes.count
        if let base = bytes.baseAddress {
            // A word with a byte below 0x20 (HTAB included: the byte loop decides) or a DEL.
            while i + 8 <= n {
                let w = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if anyByteBelow(w, 0x20) || anyByteEqual(w, 0x7F) { break }
                i += 8
            }
        }
        while i < n && isFieldValueByte(bytes[i]) { i += 1 }
        return i
    }

    /// True when every byte may appear in a field value.
    @inline(__always)
    static func allFieldValueBytes(_ bytes: UnsafeRawBufferPointer) -> Bool {
        firstNonFieldValueByte(bytes, from: 0) == bytes.count
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
