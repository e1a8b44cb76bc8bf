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
        // Cheapest first: a dotted quad passes in one scan, a name fails it at its first letter.
        if hostBytes[0] != UInt8(ascii: "["), IPv4Text.parse(hostBytes) == nil, IPv4Text.endsInANumber(hostBytes) {
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

    /// RFC 4291 text form (`IPv6Text`, shared with the egress policy).
    static func isIPv6(_ b: UnsafeRawBufferPointer) -> Bool {
        IPv6Text.parse(b) != nil
    }
}
