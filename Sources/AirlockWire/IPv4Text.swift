/// IPv4 addresses in text, as every part of Airlock reads them: the wire parser (a Host field,
/// an absolute-form or CONNECT target), the configuration reader (`upstream`, `match.host`) and
/// the egress policy's ranges. One definition, so that no two places read one host two ways.
public enum IPv4Text {
    /// Four decimal parts 0–255 without leading zeros (`127.0.0.1`), as a big-endian `UInt32`;
    /// nil for anything else (`127.1`, `0x7f000001`, `0177.0.0.1`, `1.2.3.4.`). Runs on every
    /// request's IPv4 host, so it reads through a plain pointer with wrapping arithmetic.
    public static func parse(_ b: UnsafeRawBufferPointer) -> UInt32? {
        let n = b.count
        guard n >= 7, n <= 15, let base = b.baseAddress else { return nil }
        let p = base.assumingMemoryBound(to: UInt8.self)
        var address: UInt32 = 0
        var parts = 0
        var i = 0
        while true {
            let start = i
            var value: UInt32 = 0
            while i < n, i &- start < 4 {
                let d = p[i] &- 0x30
                if d > 9 { break }
                value = value &* 10 &+ UInt32(d)
                i &+= 1
            }
            let len = i &- start
            if len == 0 || len > 3 || value > 255 || (len > 1 && p[start] == 0x30) { return nil }
            address = address << 8 | value
            parts &+= 1
            if i == n { return parts == 4 ? address : nil }
            if p[i] != UInt8(ascii: ".") || parts == 4 { return nil }
            i &+= 1
        }
    }

    public static func parse(_ text: String) -> UInt32? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    /// The WHATWG URL parser's "ends in a number" test: the last label (after one trailing dot
    /// is dropped) is all decimal digits, or `0x` followed by hex digits. Browsers and curl read
    /// such a host as an IPv4 address (`0x7f.1` is 127.0.0.1 to them), so it must `parse` to
    /// mean the same thing here.
    public static func endsInANumber(_ b: UnsafeRawBufferPointer) -> Bool {
        var end = b.count
        if end > 0 && b[end - 1] == UInt8(ascii: ".") { end -= 1 }
        var start = end
        while start > 0 && b[start - 1] != UInt8(ascii: ".") { start -= 1 }
        guard start < end else { return false }
        let label = UnsafeRawBufferPointer(rebasing: b[start..<end])
        if label.allSatisfy(ByteClass.isDigit) { return true }
        guard label.count >= 2, label[0] == UInt8(ascii: "0"), label[1] | 0x20 == UInt8(ascii: "x") else { return false }
        return label.dropFirst(2).allSatisfy(ByteClass.isHexDigit)
    }

    public static func endsInANumber(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { endsInANumber(UnsafeRawBufferPointer($0)) }
    }
}
