/// Which request hosts a route accepts.
///
/// Written in the config as `*` (any host), `*.example.com` (any subdomain, at
/// any depth, but not `example.com` itself) or an exact host. Patterns are
/// stored lowercased; IPv6 hosts are written in brackets, as in a Host header.
public enum HostPattern: Sendable, Equatable, CustomStringConvertible {
    case any
    case exact(String)
    /// The suffix including its leading dot: `*.example.com` -> `.example.com`.
    case suffix(String)

    /// Parses a pattern as written in `match.host`; nil if it is not one.
    public init?(_ text: String) {
        guard case .success(let pattern) = Self.parse(text) else { return nil }
        self = pattern
    }

    static func parse(_ text: String) -> Result<HostPattern, ConfigError> {
        func fail(_ message: String) -> Result<HostPattern, ConfigError> {
            .failure(ConfigError(keyPath: "", message: message))
        }
        let lower = text.lowercased()
        if lower == "*" { return .success(.any) }
        if lower.hasPrefix("*.") {
            let rest = String(lower.dropFirst(2))
            guard HostSyntax.isHostName(rest) else {
                return fail("\"\(text)\" is not a valid wildcard; expected \"*.\" followed by a domain, e.g. *.example.com")
            }
            return .success(.suffix("." + rest))
        }
        if lower.contains("*") {
            return fail("\"\(text)\": a wildcard is only allowed as \"*\" or a leading \"*.\"")
        }
        if lower.hasPrefix("[") {
            guard lower.hasSuffix("]"), HostSyntax.ipv6Bytes(String(lower.dropFirst().dropLast())) != nil else {
                return fail("\"\(text)\" is not a bracketed IPv6 address")
            }
            return .success(.exact(lower))
        }
        if lower.contains(":") {
            return fail("\"\(text)\": a host pattern has no port, and IPv6 addresses are written in brackets")
        }
        guard HostSyntax.isHostName(lower) else {
            return fail("\"\(text)\" is not a valid host name")
        }
        return .success(.exact(lower))
    }

    /// Whether `host` (the request's host without port, e.g. `a.example.com`
    /// or `[::1]`) is accepted. ASCII case-insensitive; allocation-free.
    public func matches(_ host: String) -> Bool {
        switch self {
        case .any:
            return true
        case .exact(let expected):
            return Self.asciiCaseInsensitiveEqual(host.utf8, expected.utf8)
        case .suffix(let suffix):
            let hostCount = host.utf8.count
            let suffixCount = suffix.utf8.count
            guard hostCount > suffixCount else { return false }
            return Self.asciiCaseInsensitiveEqual(host.utf8.dropFirst(hostCount - suffixCount), suffix.utf8)
        }
    }

    /// The pattern as written in the config: `*`, `*.example.com`, `api.example.com`.
    public var description: String {
        switch self {
        case .any: return "*"
        case .exact(let host): return host
        case .suffix(let suffix): return "*" + suffix
        }
    }

    /// `pattern` is already lowercase; only `candidate` is folded.
    private static func asciiCaseInsensitiveEqual<C: Collection, P: Collection>(
        _ candidate: C, _ pattern: P
    ) -> Bool where C.Element == UInt8, P.Element == UInt8 {
        guard candidate.count == pattern.count else { return false }
        for (c, p) in zip(candidate, pattern) {
            let folded = (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) ? c | 0x20 : c
            if folded != p { return false }
        }
        return true
    }
}
