import AirlockWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Host-name and address syntax used by `listen`, `match.host` and `upstream`.
/// Load-time only; nothing here runs per request.
enum HostSyntax {
    /// A DNS name or IPv4 literal: labels of `[a-z0-9_-]` separated by single dots.
    static func isHostName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        var labelLength = 0
        for byte in host.utf8 {
            switch byte {
            case UInt8(ascii: "."):
                if labelLength == 0 { return false }
                labelLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                labelLength += 1
                if labelLength > 63 { return false }
            default:
                return false
            }
        }
        guard labelLength > 0 else { return false }
        // A name whose last label is a number is an IPv4 address to browsers and curl
        // (`127.1`, `0x7f.1`, `0177.0.0.1`): only the plain dotted quad means one thing.
        return !IPv4Text.endsInANumber(host) || IPv4Text.parse(host) != nil
    }

    /// The 16 bytes of an IPv6 literal (no brackets), or nil.
    static func ipv6Bytes(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        let ok = text.withCString { inet_pton(AF_INET6, $0, &address) } == 1
        guard ok else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// The 4 bytes of a dotted-quad IPv4 literal, or nil.
    static func ipv4Bytes(_ text: String) -> [UInt8]? {
        var address = in_addr()
        let ok = text.withCString { inet_pton(AF_INET, $0, &address) } == 1
        guard ok else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// True for 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104 and the name `localhost`.
    /// Any other name is treated as non-loopback: we fail closed.
    static func isLoopback(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower == "localhost." { return true }
        if let v4 = ipv4Bytes(lower) { return v4[0] == 127 }
        if let v6 = ipv6Bytes(lower) {
            if v6[0..<15].allSatisfy({ $0 == 0 }) && v6[15] == 1 { return true }
            let mapped = v6[0..<10].allSatisfy({ $0 == 0 }) && v6[10] == 0xFF && v6[11] == 0xFF
            return mapped && v6[12] == 127
        }
        return false
    }

    /// Splits `host:port` or `[v6]:port`. The host comes back without brackets.
    /// Returns nil with a reason when the shape is wrong.
    static func splitHostPort(_ text: String) -> Result<(host: String, port: String?, bracketed: Bool), SplitError> {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return .failure(.unclosedBracket) }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return .success((host, nil, true)) }
            guard rest.hasPrefix(":") else { return .failure(.junkAfterBracket) }
            return .success((host, String(rest.dropFirst()), true))
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        switch parts.count {
        case 1: return .success((text, nil, false))
        case 2: return .success((String(parts[0]), String(parts[1]), false))
        default: return .failure(.unbracketedIPv6)
        }
    }

    enum SplitError: Error {
        case unclosedBracket
        case junkAfterBracket
        case unbracketedIPv6

        var message: String {
            switch self {
            case .unclosedBracket: return "missing \"]\" after IPv6 address"
            case .junkAfterBracket: return "expected \":port\" after \"]\""
            case .unbracketedIPv6: return "IPv6 addresses must be written in brackets, e.g. [::1]:8080"
            }
        }
    }

    /// A decimal port 0...65535 (digits only).
    static func parsePort(_ text: String) -> UInt16? {
        guard !text.isEmpty, text.utf8.count <= 5,
              text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt16(text)
    }
}
