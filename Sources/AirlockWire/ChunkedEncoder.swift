/// Framing bytes for writing a chunked body. The payload itself is written by the caller
/// between `chunkHeader(size:)` and `chunkTrailer`, so it is never copied here.
public enum ChunkedEncoder {
    /// Lower-case hex size and CRLF: 26 → "1a\r\n". `size` must be > 0 (use `last` to finish).
    public static func chunkHeader(size: Int) -> [UInt8] {
        precondition(size > 0, "a chunk of size 0 ends the body: use ChunkedEncoder.last")
        return TextBuilder.withBytes(capacity: 18, {
            $0.append(hex: UInt64(size))
            $0.append("\r\n")
        }) { Array($0) }
    }

    /// "\r\n" after each chunk's data.
    public static let chunkTrailer: [UInt8] = [ByteClass.cr, ByteClass.lf]

    /// The last chunk and an empty trailer section: "0\r\n\r\n".
    public static let last: [UInt8] = Array("0\r\n\r\n".utf8)
}
