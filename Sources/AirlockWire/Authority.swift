/// `host [":" port]` as it appears in a Host field, an absolute-form target or a CONNECT target.
///
/// Stricter than RFC 3986 on purpose, since every byte here may end up in a DNS query or a log:
/// a reg-name may hold only ALPHA, DIGIT and `-._~` (no percent-encoding, no sub-delims); an
/// IP-literal must be a valid IPv6 address without a zone; a port is 1–5 digits in 1...65535.
struct Authority: Sendable, Equatable {
    /// Lower-cased; IPv6 kept in brackets: "[::1]".
    var host: String
    var port: UInt16?

    static let maxHostBytes = 255

    /// Parses `bytes`; throws `code` with a detail naming the problem. `userinfo` (`@`) is refused.
    static func parse(
        _ bytes: UnsafeRawBufferPointer, requirePort: Bool, code: WireError.Code
    ) throws(WireError) -> Authority {
        let n = bytes.count
        var hostEnd: Int
        if n > 0 && bytes[0] == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")),
                  isIPv6(UnsafeRawBufferPointer(rebasing: bytes[1..<close]))
            else { throw WireError.quoting(code, "bad IP literal: ", bytes) }
            hostEnd = close + 1
            guard hostEnd == n || bytes[hostEnd] == ByteClass.colon else {
                throw WireError.quoting(code, "junk after IP literal: ", bytes)
            }
        } else {
            hostEnd = 0
            while hostEnd < n && bytes[hostEnd] != ByteClass.colon {
                let b = bytes[hostEnd]
                if b == UInt8(ascii: "@") { throw WireError.quoting(code, "userinfo not allowed: ", bytes) }
                guard ByteClass.isUnreserved(b) else { throw WireError.quoting(code, "bad host byte: ", bytes) }
                hostEnd += 1
            }
        }
        guard hostEnd > 0 else { throw WireError.quoting(code, "empty host: ", bytes) }
        guard hostEnd <= maxHostBytes else { throw WireError(code, "host longer than \(maxHostBytes) bytes") }

        var port: UInt16?
        if hostEnd < n {
            port = try parsePort(UnsafeRawBufferPointer(rebasing: bytes[(hostEnd + 1)...]), whole: bytes, code: code)
        } else if requirePort {
            throw WireError.quoting(code, "port required: ", bytes)
        }
        let hostBytes = UnsafeRawBufferPointer(rebasing: bytes[..<hostEnd])
        // Cheapest first: a dotted quad passes in one scan, a name fails isIPv4 at its first letter.
        if hostBytes[0] != UInt8(ascii: "["), !isIPv4(hostBytes), endsInANumber(hostBytes) {
            throw WireError.quoting(.invalidHost, "not a plain dotted-quad IPv4 address: ", hostBytes)
        }
        let host = ByteClass.lowercasedString(hostBytes)
        return Authority(host: host, port: port)
    }

    /// 1–5 digits, 1...65535.
    private static func parsePort(
        _ digits: UnsafeRawBufferPointer, whole: UnsafeRawBufferPointer, code: WireError.Code
    ) throws(WireError) -> UInt16 {
        guard (1...5).contains(digits.count) else { throw WireError.quoting(code, "bad port: ", whole) }
        var value = 0
        for b in digits {
            guard ByteClass.isDigit(b) else { throw WireError.quoting(code, "bad port: ", whole) }
            value = value * 10 + Int(b &- 0x30)
        }
        guard (1...65535).contains(value) else { throw WireError.quoting(code, "port out of range: ", whole) }
        return UInt16(value)
    }

    /// RFC 4291 text form: up to eight 1–4 hex digit groups, one `::`, optional dotted-quad tail.
    static func isIPv6(_ b: UnsafeRawBufferPointer) -> Bool {
        let n = b.count
        guard n >= 2 else { return false }
        var i = 0
        var groups = 0
        var compressed = false
        if b[0] == ByteClass.colon {
            guard b[1] == ByteClass.colon else { return false }
            compressed = true
            i = 2
        }
        while i < n {
            let start = i
            while i < n && ByteClass.isHexDigit(b[i]) && i - start < 5 { i += 1 }
            if i < n && b[i] == UInt8(ascii: ".") {
                guard isIPv4(UnsafeRawBufferPointer(rebasing: b[start...])) else { return false }
                groups += 2
                break
            }
            guard (1...4).contains(i - start) else { return false }
            groups += 1
            if i == n { break }
            guard b[i] == ByteClass.colon else { return false }
            i += 1
            if i < n && b[i] == ByteClass.colon {
                guard !compressed else { return false }
                compressed = true
                i += 1
            } else if i == n {
                return false
            }
        }
        return compressed ? groups <= 7 : groups == 8
    }

    /// The WHATWG URL parser's "ends in a number" test: the last label (after one trailing dot
    /// is dropped) is all decimal digits, or `0x` followed by hex digits. Such a host is parsed
    /// as an IPv4 address by browsers and curl (`0x7f.1` is 127.0.0.1 to them), so it must be a
    /// plain dotted quad to mean the same thing here.
    static func endsInANumber(_ b: UnsafeRawBufferPointer) -> Bool {
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

    /// Four dec-octets 0–255 without leading zeros. Runs on every request's host (the number
    /// check above), so it reads the bytes through a plain pointer with wrapping arithmetic.
    static func isIPv4(_ b: UnsafeRawBufferPointer) -> Bool {
        let n = b.count
        guard n >= 7, n <= 15, let base = b.baseAddress else { return false }
        let p = base.assumingMemoryBound(to: UInt8.self)
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
            if len == 0 || len > 3 || value > 255 || (len > 1 && p[start] == 0x30) { return false }
            parts &+= 1
            if i == n { return parts == 4 }
            if p[i] != UInt8(ascii: ".") || parts == 4 { return false }
            i &+= 1
        }
    }
}
