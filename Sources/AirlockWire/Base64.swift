/// Standard base64 (RFC 4648 section 4) with padding, strict: the decoder accepts only the
/// canonical encoding of some byte string, so one pin has exactly one spelling. Used for pins
/// (AirlockSecurity) and Basic credentials (AirlockSerialization).
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i]
            let b1 = i + 1 < bytes.count ? bytes[i + 1] : 0
            let b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Why a text is not canonical base64.
    public enum DecodeError: Error, Equatable {
        case badLength          // not a multiple of 4 characters (padding missing or extra)
        case badCharacter       // outside the alphabet, or `=` anywhere but the end
        case nonZeroTrailingBits // padding hides set bits: not the canonical encoding
    }

    public static func decode(_ text: String) throws(DecodeError) -> [UInt8] {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { throw .badLength }
        let padding = chars.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
        guard padding <= 2 else { throw .badCharacter }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in chars.dropLast(padding) {
            guard let v = value(of: c) else { throw .badCharacter }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Left-over bits (2 after one `=`, 4 after `==`) must be zero in the canonical encoding.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { throw .nonZeroTrailingBits }
        return out
    }

    private static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
