public import AirlockWire

/// Where a stored response lives: the request's absolute URL (GET and HEAD share it, RFC 9111
/// 2) and the variant, the values of the request fields the response's `Vary` names (4.1).
public struct CacheKey: Sendable, Hashable {
    public let url: String
    /// "" without `Vary`; otherwise `name=value` per named field, NUL-separated, absent fields
    /// told apart from empty ones.
    public let variant: String
    /// Hashed once: a lookup and its fill use a key in several tables, and hashing the URL
    /// each time was the miss path's largest cost (perf: `Hasher.combine` 10 %, with retains).
    /// SipHash-1-3 under the process's random key, as `Hasher` would make it, for a third of
    /// its instructions (`SipHash`).
    private let hash: Int

    public init(url: String, variant: String = "") {
        self.url = url
        self.variant = variant
        var h = SipHash.hash(url)
        // Most keys have no variant: its empty string is not hashed (keys of one URL differ
        // by their variants' text, which `==` compares). Both halves are keyed, so their
        // mix is as unpredictable as each.
        if !variant.isEmpty { h = (h &* 0x9E37_79B9_7F4A_7C15) ^ SipHash.hash(variant) }
        self.hash = Int(truncatingIfNeeded: h)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// What a `Dictionary` probes with: the key's own hash (a seeded SipHash of its text, as
    /// `Hasher` makes it, so no more predictable than the default) mixed with the table's seed
    /// by MurmurHash3's 64-bit finalizer (every output bit depends on every input bit, so two
    /// tables' seeds give unrelated bucket orders, as `Hasher` does), instead of a fresh
    /// `Hasher` run for every probe: a miss probes the entries and the fills twice each, and
    /// each run was ~250 instructions.
    public func _rawHashValue(seed: Int) -> Int {
        var x = UInt64(bitPattern: Int64(hash ^ seed))
        x ^= x >> 33
        x &*= 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x &*= 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return Int(bitPattern: UInt(x))
    }

    public static func == (a: CacheKey, b: CacheKey) -> Bool {
        a.hash == b.hash && a.url == b.url && a.variant == b.variant
    }

    /// `scheme://host[:port]path?query`: scheme and host lower-cased, the default port left
    /// out, so `http://A.test:80/x` and `/x` with `Host: a.test` are one URL. Nil for CONNECT's
    /// authority-form and OPTIONS `*`.
    public static func url(scheme: Scheme, request: RequestHead) -> String? {
        switch request.target {
        case .origin(let path):
            return absolute(scheme: scheme, host: request.host, port: request.port, path: path)
        case .absolute(let s, let host, let port, let path):
            return absolute(scheme: s, host: host, port: port, path: path)
        case .authority, .asterisk:
            return nil
        }
    }

    static func absolute(scheme: Scheme, host: String, port: UInt16?, path: String) -> String {
        // Lower-cased only when it has upper-case letters (lowercased() always makes a new string).
        var host = host
        if host.withUTF8({ $0.contains { $0 >= 0x41 && $0 <= 0x5A } }) { host = host.lowercased() }
        let portText = port.map { $0 == scheme.defaultPort ? 0 : 1 + TextBuilder.decimalCount($0) } ?? 0
        // One allocation: the URL written into the String's own storage.
        return TextBuilder.string(capacity: scheme.rawValue.utf8.count + 3 + host.utf8.count + portText + path.utf8.count) { out in
            switch scheme {
            case .http: out.append("http://")
            case .https: out.append("https://")
            }
            out.append(string: host)
            if let port, port != scheme.defaultPort {
                out.append(":")
                out.append(decimal: port)
            }
            out.append(string: path)
        }
    }

    /// The `scheme://host[:port]` part of a URL built by `url(scheme:request:)`.
    static func origin(of url: String) -> Substring {
        let afterScheme = url.firstIndex(of: ":").map { url.index($0, offsetBy: 3, limitedBy: url.endIndex) ?? url.endIndex }
            ?? url.startIndex
        let rest = url[afterScheme...]
        return url[..<(rest.firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex)]
    }

    /// The variant of `request` for a response that varies on `names` (lower-case): each
    /// field's lines combined with ", " (RFC 9110 5.3), absent marked apart from empty.
    static func variant(names: [String], request: RequestHead) -> String {
        guard !names.isEmpty else { return "" }
        return names.map { name in
            let values = request.headers.values(name: name)
            return values.isEmpty ? name + "\u{1}" : name + "=" + values.joined(separator: ", ")
        }.joined(separator: "\u{0}")
    }
}
