/// Which client-sent `X-Request-Id` values Airlock keeps: 1 to 128 bytes of
/// `[A-Za-z0-9._:-]`. Anything else (empty, too long, spaces, quotes, non-ASCII, …) is
/// replaced by Airlock's own id, so an id is always safe to log, to put in JSON and to
/// send on.
public enum RequestIDSyntax {
    public static let maxLength = 128

    public static func isWellFormed(_ v: UnsafeRawBufferPointer) -> Bool {
        guard !v.isEmpty, v.count <= maxLength else { return false }
        for b in v {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                continue
            default:
                return false
            }
        }
        return true
    }

    public static func isWellFormed(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { isWellFormed(UnsafeRawBufferPointer($0)) }
    }
}
