/// Where the gateway listens: `127.0.0.1:8080`, `[::1]:8080`, `localhost:0`.
///
/// `host` is stored without brackets (`::1`); `description` adds them back.
/// Port 0 asks the kernel for a free port (tests bind `127.0.0.1:0`).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible, LosslessStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; nil if it does not parse. See `parse(_:)` for the reason.
    public init?(_ description: String) {
        guard case .success(let address) = Self.parse(description) else { return nil }
        self = address
    }

    /// Parses `HOST:PORT`, or says what is wrong with it.
    public static func parse(_ text: String) -> Result<ListenAddress, ConfigError> {
        func fail(_ message: String) -> Result<ListenAddress, ConfigError> {
            .failure(ConfigError(keyPath: "listen", message: message))
        }
        let split: (host: String, port: String?, bracketed: Bool)
        switch HostSyntax.splitHostPort(text) {
        case .success(let parts): split = parts
        case .failure(let error): return fail(error.message)
        }
        guard let portText = split.port else {
            return fail("expected HOST:PORT, e.g. 127.0.0.1:8080, got \"\(text)\"")
        }
        guard let port = HostSyntax.parsePort(portText) else {
            return fail("port must be an integer 0...65535, got \"\(portText)\"")
        }
        if split.bracketed {
            guard HostSyntax.ipv6Bytes(split.host) != nil else {
                return fail("\"\(split.host)\" is not an IPv6 address")
            }
        } else if !HostSyntax.isHostName(split.host) {
            return fail("\"\(split.host)\" is not a host name or IPv4 address")
        }
        return .success(ListenAddress(host: split.host.lowercased(), port: port))
    }

    /// 127.0.0.0/8, ::1 or `localhost`. Every other address counts as reachable
    /// from outside, which is what the open-proxy guard needs.
    public var isLoopback: Bool { HostSyntax.isLoopback(host) }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
