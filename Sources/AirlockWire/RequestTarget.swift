/// The request-target of a request line, in one of the four forms of RFC 9112 section 3.2.
public enum RequestTarget: Sendable, Equatable {
    /// `/a/b?q=1`.
    case origin(path: String)
    /// `http://Example.com:8080/a?q`: host lower-cased, IPv6 kept in brackets, path "/" when empty.
    case absolute(scheme: Scheme, host: String, port: UInt16?, path: String)
    /// CONNECT `host:port`.
    case authority(host: String, port: UInt16)
    /// OPTIONS `*`.
    case asterisk

    /// The target as it would be sent to an origin server: the path (with query) for origin-
    /// and absolute-form, `host:port` for authority-form, `*` for asterisk-form.
    public var originFormText: String {
        switch self {
        case .origin(let path): path
        case .absolute(_, _, _, let path): path
        case .authority(let host, let port): "\(host):\(port)"
        case .asterisk: "*"
        }
    }

    /// Parses a target for `method`. Every problem is `badTarget` (400), or for CONNECT
    /// `invalidConnectTarget` (400).
    ///
    /// - origin-form must start with "/" and hold only pchar, "/", "?" and valid `%HH`.
    /// - absolute-form: scheme http/https (any case), no userinfo, non-empty host, valid port.
    /// - authority-form only (and always) with CONNECT (`invalidConnectTarget` when it is not one);
    ///   asterisk-form only with OPTIONS.
    /// - A fragment (`#`) is refused in every form.
    static func parse(_ bytes: UnsafeRawBufferPointer, method: Method) throws(WireError) -> RequestTarget {
        guard let first = bytes.first else { throw WireError(.badTarget, "empty target") }
        if method == .connect {
            return try parseAuthorityForm(bytes)
        }
        if first == UInt8(ascii: "/") {
            try validatePathAndQuery(bytes, whole: bytes)
            return .origin(path: String(decoding: bytes, as: UTF8.self))
        }
        if bytes.count == 1 && first == UInt8(ascii: "*") {
            guard method == .options else { throw WireError(.badTarget, "'*' is only for OPTIONS") }
            return .asterisk
        }
        return try parseAbsoluteForm(bytes)
    }

    /// CONNECT's `host:port` (RFC 9110 9.3.6), strictly: a reg-name or IPv4 address, or an
    /// IPv6 address in brackets; then ":" and a port 1...65535 of 1–5 digits. Everything else
    /// (no port, userinfo, a path, query or fragment, an unbracketed IPv6 address, an empty
    /// host, a scheme) is `invalidConnectTarget` (400), whose detail names the problem.
    private static func parseAuthorityForm(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> RequestTarget {
        let authority = try Authority.parse(bytes, requirePort: true, code: .invalidConnectTarget)
        guard let port = authority.port else { throw WireError.quoting(.invalidConnectTarget, "port required: ", bytes) }
        return .authority(host: authority.host, port: port)
    }

    private static func parseAbsoluteForm(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> RequestTarget {
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://".
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            let ok = ByteClass.isAlpha(b) || (i > 0 && (ByteClass.isDigit(b) || b == 0x2B || b == 0x2D || b == 0x2E))
            guard ok else { break }
            i += 1
        }
        let schemeEnd = i
        guard schemeEnd > 0, bytes.count >= schemeEnd + 3,
              bytes[schemeEnd] == ByteClass.colon,
              bytes[schemeEnd + 1] == UInt8(ascii: "/"), bytes[schemeEnd + 2] == UInt8(ascii: "/")
        else {
            throw WireError.quoting(.badTarget, "not a valid request-target: ", bytes)
        }
        let schemeBytes = UnsafeRawBufferPointer(rebasing: bytes[..<schemeEnd])
        let scheme: Scheme
        if ByteClass.equalsLowercased(schemeBytes, "http") {
            scheme = .http
        } else if ByteClass.equalsLowercased(schemeBytes, "https") {
            scheme = .https
        } else {
            throw WireError.quoting(.badTarget, "scheme not http or https: ", bytes)
        }

        let authorityStart = schemeEnd + 3
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count {
            let b = bytes[authorityEnd]
            if b == UInt8(ascii: "/") || b == UInt8(ascii: "?") { break }
            if b == UInt8(ascii: "#") { throw WireError.quoting(.badTarget, "fragment in target: ", bytes) }
            authorityEnd += 1
        }
        let authority = try Authority.parse(
            UnsafeRawBufferPointer(rebasing: bytes[authorityStart..<authorityEnd]), requirePort: false, code: .badTarget
        )
        let rest = UnsafeRawBufferPointer(rebasing: bytes[authorityEnd...])
        try validatePathAndQuery(rest, whole: bytes)
        let path: String
        if rest.isEmpty {
            path = "/"
        } else if rest[0] == UInt8(ascii: "?") {
            path = "/" + String(decoding: rest, as: UTF8.self)
        } else {
            path = String(decoding: rest, as: UTF8.self)
        }
        return .absolute(scheme: scheme, host: authority.host, port: authority.port, path: path)
    }

    /// Path and query bytes: pchar, "/", "?", and `%HH` with two hex digits. No fragment.
    private static func validatePathAndQuery(
        _ bytes: UnsafeRawBufferPointer, whole: UnsafeRawBufferPointer
    ) throws(WireError) {
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            if ByteClass.isPathOrQueryByte(b) {
                i += 1
            } else if b == UInt8(ascii: "%") {
                guard i + 2 < n, ByteClass.isHexDigit(bytes[i + 1]), ByteClass.isHexDigit(bytes[i + 2]) else {
                    throw WireError.quoting(.badTarget, "bad percent-encoding: ", whole)
                }
                i += 3
            } else if b == UInt8(ascii: "#") {
                throw WireError.quoting(.badTarget, "fragment in target: ", whole)
            } else {
                throw WireError.quoting(.badTarget, "bad target byte: ", whole)
            }
        }
    }
}
