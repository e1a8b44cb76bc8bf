/// Shared byte-level helpers for the body checkers.
enum UTF8Decoding {
    /// Decodes the multi-byte UTF-8 sequence whose lead byte (>= 0x80) is at `i`.
    /// Nil for an ill-formed sequence: a stray continuation byte, an overlong form, a surrogate,
    /// a scalar above U+10FFFF, or a sequence cut off by `end`.
    @inline(__always)
    static func decode(_ p: UnsafePointer<UInt8>, at i: Int, end: Int) -> (scalar: UInt32, length: Int)? {
        let lead = p[i]
        @inline(__always) func continuation(_ k: Int) -> UInt32? {
            guard i + k < end else { return nil }
            let b = p[i + k]
            return b & 0xC0 == 0x80 ? UInt32(b & 0x3F) : nil
        }
        switch lead {
        case 0xC2...0xDF:
            guard let c1 = continuation(1) else { return nil }
            return (UInt32(lead & 0x1F) << 6 | c1, 2)
        case 0xE0...0xEF:
            guard let c1 = continuation(1), let c2 = continuation(2) else { return nil }
            let scalar = UInt32(lead & 0x0F) << 12 | c1 << 6 | c2
            guard scalar >= 0x800, !(0xD800...0xDFFF).contains(scalar) else { return nil }
            return (scalar, 3)
        case 0xF0...0xF4:
            guard let c1 = continuation(1), let c2 = continuation(2), let c3 = continuation(3) else { return nil }
            let scalar = UInt32(lead & 0x07) << 18 | c1 << 12 | c2 << 6 | c3
            guard scalar >= 0x10000, scalar <= 0x10FFFF else { return nil }
            return (scalar, 4)
        default:
            return nil
        }
    }

    /// `'x'` for printable ASCII, `0xNN` otherwise: how messages show an offending byte.
    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte <= 0x7E { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0\(hex)" : "0x\(hex)"
    }
}
