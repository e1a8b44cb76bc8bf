/// Which fields a proxy must not forward (RFC 9110 7.6.1).
public enum HopByHop {
    /// True for Connection, Proxy-Connection, Keep-Alive, TE, Trailer, Upgrade,
    /// Proxy-Authorization, Transfer-Encoding, Content-Length (re-framed by the proxy) and any
    /// name listed in `connectionTokens` (as from `headers.tokens(.connection)`), ignoring case.
    public static func isHopByHop(_ headers: HTTPHeaders, at i: Int, connectionTokens: [String]) -> Bool {
        switch headers.known(at: i) {
        case .connection, .proxyConnection, .keepAlive, .te, .trailer, .upgrade, .proxyAuthorization,
             .transferEncoding, .contentLength:
            return true
        default:
            break
        }
        guard !connectionTokens.isEmpty else { return false }
        return headers.withNameBytes(at: i) { name in
            connectionTokens.contains { token in
                var token = token
                return token.withUTF8 { ByteClass.equalsIgnoringCase(name, UnsafeRawBufferPointer($0)) }
            }
        }
    }
}
