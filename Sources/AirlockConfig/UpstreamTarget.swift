/// A fixed upstream origin: scheme, host and port, nothing else.
///
/// `host` is stored lowercased and without brackets (`::1`), ready for an
/// address lookup; `authority` is the form for a Host header.
public struct UpstreamTarget: Sendable, Equatable, CustomStringConvertible {
    /// `"http"` or `"https"`.
    public var scheme: String
    public var host: String
    /// Defaults to 80 for http and 443 for https when the URL names none.
    public var port: UInt16

    public init(scheme: String, host: String, port: UInt16? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? Self.defaultPort(scheme: scheme)
    }

    /// Parses `http://host[:port][/]`; nil if it is not one. See `parse(_:)`.
    public init?(url: String) {
        guard case .success(let target) = Self.parse(url) else { return nil }
        self = target
    }

    /// `host:port`, with the port left out when it is the scheme's default
    /// and IPv6 hosts in brackets: `api.example.com`, `[::1]:9000`.
    public var authority: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return port == Self.defaultPort(scheme: scheme) ? hostPart : "\(hostPart):\(port)"
    }

    /// The URL as written in the config: `http://127.0.0.1:9000`.
    public var description: String { "\(scheme)://\(authority)" }

    static func defaultPort(scheme: String) -> UInt16 {
        scheme == "https" ? 443 : 80
    }

    /// Accepts an http or https URL with a host and optional port; refuses
    /// userinfo, any path other than `/`, a query and a fragment.
    static func parse(_ text: String) -> Result<UpstreamTarget, ConfigError> {
        func fail(_ message: String) -> Result<UpstreamTarget, ConfigError> {
            .failure(ConfigError(keyPath: "", message: message))
        }
        guard let schemeEnd = text.firstRange(of: "://") else {
            return fail("expected \"origin\" or an http:// or https:// URL, got \"\(text)\"")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            return fail("scheme must be http or https, got \"\(scheme)\"")
        }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = String(afterScheme[..<authorityEnd])
        let remainder = afterScheme[authorityEnd...]
        if authority.contains("@") {
            return fail("must not contain userinfo (user:password@); put credentials in headers, not the URL")
        }
        if remainder.contains("?") { return fail("must not contain a query") }
        if remainder.contains("#") { return fail("must not contain a fragment") }
        guard remainder.isEmpty || remainder == "/" else {
            return fail("must not contain a path (got \"\(remainder)\"); routes forward the request path unchanged")
        }
        let split: (host: String, port: String?, bracketed: Bool)
        switch HostSyntax.splitHostPort(authority) {
        case .success(let parts): split = parts
        case .failure(let error): return fail(error.message)
        }
        if split.host.isEmpty { return fail("must name a host") }
        if split.bracketed {
            guard HostSyntax.ipv6Bytes(split.host) != nil else {
                return fail("\"\(split.host)\" is not an IPv6 address")
            }
        } else if !HostSyntax.isHostName(split.host) {
            return fail("\"\(split.host)\" is not a valid host name or IPv4 address")
        }
        var port: UInt16?
        if let portText = split.port {
            guard let parsed = HostSyntax.parsePort(portText), parsed != 0 else {
                return fail("port must be an integer 1...65535, got \"\(portText)\"")
            }
            port = parsed
        }
        return .success(UpstreamTarget(scheme: scheme, host: split.host.lowercased(), port: port))
    }
}
