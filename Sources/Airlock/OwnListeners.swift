import AirlockIO
import AirlockSecurity

/// This process's own listeners (the proxy's and the admin's), by bound address: a connect to
/// one of them is a loop (508), whatever name led there. A wildcard listener (`0.0.0.0`, `::`)
/// answers on loopback and on every address of this machine's interfaces, so those count too.
struct OwnListeners: Sendable {
    private let listeners: [(address: IPAddress, port: UInt16)]
    private let interfaces: Set<IPAddress>

    init(_ listeners: [SocketAddress], interfaces: [SocketAddress]) {
        self.listeners = listeners.compactMap { l in IPAddress(bytes: l.addressBytes).map { ($0, l.port) } }
        self.interfaces = Set(interfaces.compactMap { IPAddress(bytes: $0.addressBytes) })
    }

    private static let unspecified: Set<IPAddress> = [IPAddress(parsing: "0.0.0.0")!, IPAddress(parsing: "::")!]

    /// True when dialling `address` would reach one of these listeners.
    func contains(_ address: SocketAddress) -> Bool {
        guard let target = IPAddress(bytes: address.addressBytes) else { return false }
        let targetIsLoopback = SpecialRange.classify(target) == .loopback
        for l in listeners where l.port == address.port {
            if l.address == target { return true }
            if Self.unspecified.contains(l.address) {
                if targetIsLoopback || Self.unspecified.contains(target) || interfaces.contains(target) { return true }
            } else if SpecialRange.classify(l.address) == .loopback, targetIsLoopback {
                return true
            }
        }
        return false
    }
}
