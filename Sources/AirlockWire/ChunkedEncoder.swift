/// Framing bytes for writing a chunked body. The payload itself is written by the caller
/// between `chunkHeader(size:)` and `chunkTrailer`, so it is never copied here.
public enum ChunkedEncoder {
    /// Lower-case hex size and CRLF: 26 → "1a\r\n". `size` must be > 0 (use `last` to finish).
    public static func chunkHeader(size: Int) -> [UInt8] {
        precondition(size > 0, "a chunk of size 0 ends the body: use ChunkedEncoder.last")
        var out: [UInt8] = []
        out.reserveCapacity(18)
        appendHex(UInt64(size), to: &out)
        out.append(ByteClass.cr)
        out.append(ByteClass.lf)
        return out
    }

    /// "\r\n" after each chunk's data.
    public static let chunkTrailer: [UInt8] = [ByteClass.cr, ByteClass.lf]

    /// The last chunk and an empty trailer section: "0\r\n\r\n".
    public static let last: [UInt8] = Array("0\r\n\r\n".utf8)

    static func appendHex(_ value: UInt64, to out: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        let p = digits.utf8Start
        var shift = 60
        while shift > 0 && (value >> UInt64(shift)) & 0xF == 0 { shift -= 4 }
        while shift >= 0 {
            out.append(p[Int((value >> UInt64(shift)) & 0xF)])
            shift -= 4
        }
    }
}
