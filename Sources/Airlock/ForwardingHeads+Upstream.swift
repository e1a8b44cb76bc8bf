import AirlockSerialization
import AirlockSession

/// The part of the forwarded request head that depends on the session's `UpstreamKey`.
extension ForwardingHeads {
    /// The `Host` value for `key`: the host alone on the scheme's default port, else host:port.
    static func authority(_ key: UpstreamKey) -> String {
        let defaultPort: UInt16 = key.scheme == "https" ? 443 : 80
        return key.port == defaultPort ? key.host : "\(key.host):\(key.port)"
    }
}
