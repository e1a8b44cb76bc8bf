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
/// directive: the qualified forms allow a cache more, never less. The value is scanned as bytes
/// (no `String` per directive): it is read on every cache lookup that carries one.
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

    @inlinable
    public init() {}

    /// Every `Cache-Control` field line of `headers`. Inlinable: a head without one (nearly
    /// every request and most responses) costs its caller one bit test.
    @inlinable
    public init(_ headers: __shared HTTPHeaders) {
        self.init()
        if headers.contains(.cacheControl) { self = CacheControl(lines: headers) }
    }

    @usableFromInline
    init(lines headers: __shared HTTPHeaders) {
        var seen = Seen()
        for i in 0..<headers.count where headers.known(at: i) == .cacheControl {
            headers.withValueBytes(at: i) { parse($0, &seen) }
        }
    }

    public init(parsing lines: [String]) {
        var seen = Seen()
        for line in lines {
            var line = line
            line.withUTF8 { parse(UnsafeRawBufferPointer($0), &seen) }
        }
    }

    /// The delta-seconds directives met so far (a second one counts as 0).
    private struct Seen {
        var maxAge = false, sMaxAge = false, minFresh = false
    }

    /// delta-seconds, or 0 when absent or malformed.
    public static func delta(_ value: String?) -> Int64 {
        guard var value else { return 0 }
        return value.withUTF8 { delta(UnsafeRawBufferPointer($0)) }
    }

    /// delta-seconds of bytes: 0 when empty or not all digits.
    public static func delta(_ b: UnsafeRawBufferPointer) -> Int64 {
        guard !b.isEmpty else { return 0 }
        var n: Int64 = 0
        for c in b {
            guard ByteClass.isDigit(c) else { return 0 }
            n = min(n * 10 + Int64(c - 0x30), maxDelta)
        }
        return n
    }

    /// One field line's directives. An element whose name is not a token, whose quoted value is
    /// not closed, or with anything but OWS after its value is skipped.
    private mutating func parse(_ b: UnsafeRawBufferPointer, _ seen: inout Seen) {
        var i = 0
        while i < b.count {
            while i < b.count, b[i] == ByteClass.comma || ByteClass.isWhitespace(b[i]) { i += 1 }
            let nameStart = i
            while i < b.count, ByteClass.isTchar(b[i]) { i += 1 }
            let name = UnsafeRawBufferPointer(rebasing: b[nameStart..<i])
            var valid = !name.isEmpty
            var value: Int64?    // delta-seconds of the value, when it has one
            if i < b.count, b[i] == UInt8(ascii: "=") {
                i += 1
                if i < b.count, b[i] == ByteClass.dquote {
                    i += 1
                    var digits: [UInt8] = []
                    var closed = false
                    while i < b.count {
                        if b[i] == ByteClass.backslash, i + 1 < b.count {
                            digits.append(b[i + 1])
                            i += 2
                        } else if b[i] == ByteClass.dquote {
                            closed = true
                            i += 1
                            break
                        } else {
                            digits.append(b[i])
                            i += 1
                        }
                    }
                    valid = valid && closed
                    value = digits.withUnsafeBytes { Self.delta($0) }
                } else {
                    let start = i
                    while i < b.count, ByteClass.isTchar(b[i]) { i += 1 }
                    value = Self.delta(UnsafeRawBufferPointer(rebasing: b[start..<i]))
                }
            }
            while i < b.count, ByteClass.isWhitespace(b[i]) { i += 1 }
            if i < b.count, b[i] != ByteClass.comma {
                valid = false
                while i < b.count, b[i] != ByteClass.comma { i += 1 }
            }
            if valid { apply(name, value ?? 0, &seen) }
        }
    }

    private mutating func apply(_ name: UnsafeRawBufferPointer, _ value: Int64, _ seen: inout Seen) {
        let eq = ByteClass.equalsLowercased
        switch name.count {
        case 6:
            if eq(name, "public") { isPublic = true }
        case 7:
            if eq(name, "max-age") {
                maxAge = seen.maxAge ? 0 : value
                seen.maxAge = true
            } else if eq(name, "private") {
                isPrivate = true
            }
        case 8:
            if eq(name, "no-store") { noStore = true } else if eq(name, "no-cache") { noCache = true } else if eq(name, "s-maxage") {
                sMaxAge = seen.sMaxAge ? 0 : value
                seen.sMaxAge = true
            }
        case 9:
            if eq(name, "min-fresh") {
                minFresh = seen.minFresh ? 0 : value
                seen.minFresh = true
            }
        case 14:
            if eq(name, "only-if-cached") { onlyIfCached = true }
        case 15:
            if eq(name, "must-revalidate") { mustRevalidate = true }
        case 16:
            if eq(name, "proxy-revalidate") { proxyRevalidate = true }
        default:
            break
        }
    }
}
