/// The one configuration error of `AirlockSecurity`: an insecure or meaningless combination of
/// options, or a malformed pin, refused when the configuration loads rather than at the first
/// handshake.
///
/// `key` is relative to the route's TLS section ("pins[1]", "allow_invalid_certificates",
/// "certificates", "pinning", "pin_scope"); the config loader prefixes its own path with
/// `prefixed(by:)`.
public struct SecurityConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public let key: String
    public let message: String

    init(key: String, _ message: String) {
        self.key = key
        self.message = message
    }

    /// The same error under a longer key path: `prefixed(by: "routes[2].tls")` turns
    /// "pins[1]" into "routes[2].tls.pins[1]".
    public func prefixed(by path: String) -> SecurityConfigError {
        path.isEmpty ? self : SecurityConfigError(key: "\(path).\(key)", message)
    }

    public var description: String { "\(key): \(message)" }
}
