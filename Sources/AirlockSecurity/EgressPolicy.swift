/// Which addresses a route may connect to (smokescreen's question, asked of every address a
/// name resolves to, before it is dialled). Pure: the gateway hands it the resolved address.
///
/// The decision, in order:
/// 1. the unspecified addresses (`0.0.0.0/8`, `::`) are never dialled: on Linux they reach
///    this machine's own listeners (Squid's `to_localhost`);
/// 2. the route's own `allow` and `deny` ranges: the longest matching prefix decides, and a
///    `deny` wins a tie (`deny: [10.0.0.0/8], allow: [10.1.2.3]` lets one host through);
/// 3. with `internal` denied (an `origin` route on a listener others can reach), the
///    special-purpose classes below are refused;
/// 4. everything else is allowed.
public struct EgressPolicy: Sendable, Equatable {
    public var allow: [CIDR]
    public var deny: [CIDR]
    /// Whether the special-purpose classes (`SpecialRange.internalClasses`) are refused
    /// unless an `allow` range names them.
    public var denyInternal: Bool

    public init(allow: [CIDR] = [], deny: [CIDR] = [], denyInternal: Bool = false) {
        self.allow = allow
        self.deny = deny
        self.denyInternal = denyInternal
    }

    /// Nothing but the unspecified addresses is refused: the check can be skipped for
    /// addresses already dialled (a pooled connection).
    public var allowsAllDialable: Bool { allow.isEmpty && deny.isEmpty && !denyInternal }

    public enum Verdict: Sendable, Equatable {
        case allowed
        case denied(Reason)
    }

    /// Why an address was refused: a bounded set, fit for a metric label.
    public enum Reason: String, Sendable, CaseIterable {
        case unspecified
        case denyList = "deny-list"
        case loopback
        case privateNetwork = "private"
        case sharedAddressSpace = "shared-address-space"
        case linkLocal = "link-local"
        case uniqueLocal = "unique-local"
        case multicast
        case reserved
    }

    public func evaluate(_ address: IPAddress) -> Verdict {
        if SpecialRange.unspecified.contains(where: { $0.contains(address) }) { return .denied(.unspecified) }
        var best: (bits: Int, deny: Bool)?
        for r in allow where r.contains(address) {
            if best == nil || r.bits > best!.bits { best = (r.bits, false) }
        }
        for r in deny where r.contains(address) {
            if best == nil || r.bits >= best!.bits { best = (r.bits, true) }
        }
        if let best { return best.deny ? .denied(.denyList) : .allowed }
        if denyInternal, let reason = SpecialRange.classify(address) { return .denied(reason) }
        return .allowed
    }
}

/// The special-purpose ranges an `origin` route on a shared listener does not reach unless
/// allowed (RFC 6890's registries, as smokescreen's "not global unicast" and private checks).
public enum SpecialRange {
    /// Never dialled, whatever a route allows.
    static let unspecified: [CIDR] = ranges("0.0.0.0/8", "::/128")

    /// Each class with its ranges, IPv4 and IPv6.
    public static let internalClasses: [(EgressPolicy.Reason, [CIDR])] = [
        (.loopback, ranges("127.0.0.0/8", "::1/128")),
        (.privateNetwork, ranges("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")),
        (.sharedAddressSpace, ranges("100.64.0.0/10")),
        // 169.254.169.254 (cloud instance metadata) is in here.
        (.linkLocal, ranges("169.254.0.0/16", "fe80::/10")),
        (.uniqueLocal, ranges("fc00::/7")),
        (.multicast, ranges("224.0.0.0/4", "ff00::/8")),
        // Class E and the limited broadcast address.
        (.reserved, ranges("240.0.0.0/4")),
    ]

    /// The class `address` falls in, if it is special-purpose.
    public static func classify(_ address: IPAddress) -> EgressPolicy.Reason? {
        for (reason, cidrs) in internalClasses where cidrs.contains(where: { $0.contains(address) }) {
            return reason
        }
        return nil
    }

    private static func ranges(_ texts: String...) -> [CIDR] {
        texts.map { try! CIDR(parsing: $0) }   // constants, checked by EgressPolicyTests
    }
}
