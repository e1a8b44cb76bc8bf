/// The `Cache-Control` directives (RFC 9111 5.2) of a request or a response: every field line of
/// that name, as one comma-separated list. Directive names compare ignoring case; a value is a
/// token or a quoted-string (commas inside quotes do not split). Unknown directives are ignored.
///
/// Delta-seconds (`max-age`, `s-maxage`, `min-fresh`) are 1*DIGIT, quoted or not; a value past
/// 2^31 counts as 2^31 (RFC 9111 1.2.2). An invalid value (`max-age=soon`, no value) or a
/// directive given twice counts as 0, so the response is stale (RFC 9111 4.2.1 allows either
/// the first occurrence or staleness; a cache is safer assuming less).
///
/// `no-cache` and `private` with a field list (`private="Set-Cookie"`) are taken as the plain
/// directive: the qualified forms allow a cache more, never less.
public struct CacheControl: Sendable, Equatable {
    public var noStore = false
    public var noCache = false
    public var isPrivate = false
    public var isPublic = false
    public var mustRevalidate = false
    public var proxyRevalidate = false
    public var onlyIfCached = false
    public var maxAge: Int64?
    public var sMaxAge: Int64?
    public var minFresh: Int64?

    /// RFC 9111 1.2.2: the greatest delta-seconds a cache must keep.
    public static let maxDelta: Int64 = 2_147_483_648

    public init() {}

    /// Every `Cache-Control` field line of `headers`.
    public init(_ headers: HTTPHeaders) {
        self.init(parsing: headers.values(name: "cache-control"))
    }

    public init(parsing lines: [String]) {
        var seen: Set<String> = []
        for line in lines {
            for (name, value) in Self.directives(line) {
                let repeated = !seen.insert(name).inserted
                switch name {
                case "no-store": noStore = true
                case "no-cache": noCache = true
                case "private": isPrivate = true
                case "public": isPublic = true
                case "must-revalidate": mustRevalidate = true
                case "proxy-revalidate": proxyRevalidate = true
                case "only-if-cached": onlyIfCached = true
                case "max-age": maxAge = repeated ? 0 : Self.delta(value)
                case "s-maxage": sMaxAge = repeated ? 0 : Self.delta(value)
                case "min-fresh": minFresh = repeated ? 0 : Self.delta(value)
                default: break
                }
            }
        }
    }

    /// delta-seconds, or 0 when absent or malformed.
    public static func delta(_ value: String?) -> Int64 {
        guard let value, !value.isEmpty else { return 0 }
        var n: Int64 = 0
        for c in value.utf8 {
            guard ByteClass.isDigit(c) else { return 0 }
            n = min(n * 10 + Int64(c - 0x30), maxDelta)
        }
        return n
    }

    /// The list's directives: (lower-cased name, value with quotes and escapes removed). An
    /// element whose name is not a token is skipped.
    static func directives(_ line: String) -> [(String, String?)] {
        var out: [(String, String?)] = []
        let b = Array(line.utf8)
        var i = 0
        while i < b.count {
            while i < b.count, b[i] == ByteClass.comma || ByteClass.isWhitespace(b[i]) { i += 1 }
            let nameStart = i
            while i < b.count, ByteClass.isTchar(b[i]) { i += 1 }
            let name = String(decoding: b[nameStart..<i].map(ByteClass.lower), as: UTF8.self)
            var value: String?
            var valid = i > nameStart
            if i < b.count, b[i] == UInt8(ascii: "=") {
                i += 1
                if i < b.count, b[i] == ByteClass.dquote {
                    i += 1
                    var text: [UInt8] = []
                    var closed = false
                    while i < b.count {
                        if b[i] == ByteClass.backslash, i + 1 < b.count {
                            text.append(b[i + 1])
                            i += 2
                        } else if b[i] == ByteClass.dquote {
                            closed = true
                            i += 1
                            break
                        } else {
                            text.append(b[i])
                            i += 1
                        }
                    }
                    valid = valid && closed
                    value = String(decoding: text, as: UTF8.self)
                } else {
                    let start = i
                    while i < b.count, ByteClass.isTchar(b[i]) { i += 1 }
                    value = String(decoding: b[start..<i], as: UTF8.self)
                }
            }
            while i < b.count, ByteClass.isWhitespace(b[i]) { i += 1 }
            if i < b.count, b[i] != ByteClass.comma {
                valid = false
                while i < b.count, b[i] != ByteClass.comma { i += 1 }
            }
            if valid { out.append((name, value)) }
        }
        return out
    }
}
