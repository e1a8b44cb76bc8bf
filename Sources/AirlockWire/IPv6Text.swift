/// IPv6 addresses in text (RFC 4291 2.2), as every part of Airlock reads them: the wire parser
/// (a bracketed host) and the egress policy's addresses and ranges. One definition, as for
/// `IPv4Text`, so that no two places read one host two ways.
public enum IPv6Text {
    /// Up to eight groups of 1–4 hex digits, at most one `::`, optionally ending in a dotted
    /// quad (`::ffff:192.0.2.1`); no zone, no brackets. The sixteen bytes, network order; nil
    /// for anything else.
    public static func parse(_ b: UnsafeRawBufferPointer) -> [UInt8]? {
        let n = b.count
        guard n >= 2 else { return nil }
        var head: [UInt16] = []   // groups before "::"
        var tail: [UInt16] = []   // groups after it
        var compressed = false
        var i = 0
        if b[0] == ByteClass.colon {
            guard b[1] == ByteClass.colon else { return nil }
            compressed = true
            i = 2
        }
        while i < n {
            let start = i
            var value: UInt16 = 0
            while i < n, i - start < 4, let h = hexValue(b[i]) {
                value = value << 4 | h
                i += 1
            }
            if i < n && b[i] == UInt8(ascii: ".") {
                // A dotted-quad tail: the last 32 bits.
                guard let v4 = IPv4Text.parse(UnsafeRawBufferPointer(rebasing: b[start...])) else { return nil }
                let quad = [UInt16(truncatingIfNeeded: v4 >> 16), UInt16(truncatingIfNeeded: v4)]
                if compressed { tail += quad } else { head += quad }
                break
            }
            guard i > start else { return nil }
            if compressed { tail.append(value) } else { head.append(value) }
            if i == n { break }
            guard b[i] == ByteClass.colon else { return nil }   // a fifth hex digit, or anything else
            i += 1
            if i < n && b[i] == ByteClass.colon {
                guard !compressed else { return nil }
                compressed = true
                i += 1
            } else if i == n {
                return nil   // a trailing single ":"
            }
        }
        let count = head.count + tail.count
        guard compressed ? count <= 7 : count == 8 else { return nil }
        let groups = head + Array(repeating: 0, count: 8 - count) + tail
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    public static func parse(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    private static func hexValue(_ c: UInt8) -> UInt16? {
        switch c {
        case 0x30...0x39: UInt16(c - 0x30)
        case 0x61...0x66: UInt16(c - 0x61 + 10)
        case 0x41...0x46: UInt16(c - 0x41 + 10)
        default: nil
        }
    }
}
