/// Which fields a proxy must not forward (RFC 9110 7.6.1).
public enum HopByHop {
    /// True for Connection, Proxy-Connection, Keep-Alive, TE, Trailer, Upgrade,
    /// Proxy-Authorization, Transfer-Encoding, Content-Length (re-framed by the proxy) and any
    /// name listed in `connectionTokens` (as from `connectionTokens(headers)`), ignoring case.
    /// Inlinable: the serializers ask it of every field they relay, nearly always answered by
    /// the field's kind alone.
    @inlinable
    public static func isHopByHop(_ headers: HTTPHeaders, at i: Int, connectionTokens: [String]) -> Bool {
        if fields.contains(headers.known(at: i)) { return true }
        guard !connectionTokens.isEmpty else { return false }
        return isListed(headers, at: i, connectionTokens: connectionTokens)
    }

    /// Whether field `i`'s name is one of `connectionTokens`, ignoring case.
    @usableFromInline
    static func isListed(_ headers: HTTPHeaders, at i: Int, connectionTokens: [String]) -> Bool {
        headers.withNameBytes(at: i) { name in
            connectionTokens.contains { token in
                var token = token
                return token.withUTF8 { ByteClass.equalsIgnoringCase(name, UnsafeRawBufferPointer($0)) }
            }
        }
    }

    /// The fields hop-by-hop by name: Connection, Proxy-Connection, Keep-Alive, TE, Trailer,
    /// Upgrade, Proxy-Authorization, Transfer-Encoding, Content-Length.
    /// (Built of constants, so a test of it folds to one mask.)
    @inlinable
    public static var fields: KnownField.Set {
        KnownField.Set(bits: KnownField.connection.bit | KnownField.proxyConnection.bit | KnownField.keepAlive.bit
            | KnownField.te.bit | KnownField.trailer.bit | KnownField.upgrade.bit | KnownField.proxyAuthorization.bit
            | KnownField.transferEncoding.bit | KnownField.contentLength.bit)
    }

    /// Names listed in Connection / Proxy-Connection (hop-by-hop by declaration), for
    /// `isHopByHop`. The common values cost no list: `keep-alive` names a field that is
    /// hop-by-hop anyway, so a head whose Connection says only that gives none.
    public static func connectionTokens(_ h: HTTPHeaders) -> [String] {
        guard h.contains(.connection) || h.contains(.proxyConnection) else { return [] }
        var namesClose = false
        var otherNames = false
        h.storage.withUnsafeBytes { all in
            h.entries.withUnsafeBufferPointer { fields in
                for e in fields where e.known == .connection || e.known == .proxyConnection {
                    let start = Int(e.valueStart)
                    switch connectionOptions(UnsafeRawBufferPointer(rebasing: all[start..<(start + Int(e.valueCount))])) {
                    case .keepAliveOnly: continue
                    case .closeOrKeepAlive: namesClose = true
                    case .otherNames:
                        otherNames = true
                        return
                    }
                }
            }
        }
        if otherNames { return h.tokens(.connection) + h.tokens(.proxyConnection) }
        // The common values, without building the token list: "keep-alive" names a field
        // that is hop-by-hop anyway; "close" names one only when a field is called Close.
        return namesClose ? closeOption : []
    }

    private static let closeOption = ["close"]

    private enum ConnectionOptions { case keepAliveOnly, closeOrKeepAlive, otherNames }

    /// What a Connection value lists: only `keep-alive`, `close` (and maybe `keep-alive`),
    /// or other names.
    private static func connectionOptions(_ v: UnsafeRawBufferPointer) -> ConnectionOptions {
        // The usual values whole, a word at a time (anything else, or unsure: the scan below).
        if KnownField.matches(v, "keep-alive") { return .keepAliveOnly }
        if KnownField.matches(v, "close") { return .closeOrKeepAlive }
        var close = false
        var i = 0
        while i < v.count {
            while i < v.count && (v[i] == 0x20 || v[i] == 0x09 || v[i] == 0x2C) { i += 1 }
            let start = i
            while i < v.count && v[i] != 0x2C && v[i] != 0x20 && v[i] != 0x09 { i += 1 }
            let token = UnsafeRawBufferPointer(rebasing: v[start..<i])
            if token.isEmpty { continue }
            if equalsLower(token, "close") {
                close = true
            } else if !equalsLower(token, "keep-alive") {
                return .otherNames
            }
        }
        return close ? .closeOrKeepAlive : .keepAliveOnly
    }

    private static func equalsLower(_ b: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0..<b.count where (b[i] | 0x20) != p[i] { return false }
        return true
    }
}
