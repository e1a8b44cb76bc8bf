import AirlockWire

/// An IPv4 or IPv6 address as 128 bits. IPv4 is held in its IPv4-mapped IPv6 form
/// (`::ffff:a.b.c.d`), so a mapped address and the IPv4 address it carries are one value, and
/// one set of ranges (`CIDR`) covers both spellings: `::ffff:127.0.0.1` is loopback.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// Bits 0–63 (network order: the first 8 bytes).
    public let high: UInt64
    /// Bits 64–127.
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// 4 bytes (IPv4) or 16 bytes (IPv6), network order; nil for any other count.
    public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
        switch bytes.count {
        case 4:
            var v: UInt64 = 0
            for b in bytes { v = v << 8 | UInt64(b) }
            self.init(high: 0, low: 0x0000_FFFF_0000_0000 | v)
        case 16:
            var h: UInt64 = 0
            var l: UInt64 = 0
            for (i, b) in bytes.enumerated() {
                if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
            }
            self.init(high: h, low: l)
        default:
            return nil
        }
    }

    /// True for `::ffff:0:0/96`: an IPv4 address (however it was spelled).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    /// The address with only its first `bits` bits kept.
    func masked(_ bits: Int) -> IPAddress {
        switch bits {
        case ...0: return IPAddress(high: 0, low: 0)
        case 1..<64: return IPAddress(high: high & ~(UInt64.max >> UInt64(bits)), low: 0)
        case 64: return IPAddress(high: high, low: 0)
        case 65..<128: return IPAddress(high: high, low: low & ~(UInt64.max >> UInt64(bits - 64)))
        default: return self
        }
    }

    /// Dotted quad for IPv4; RFC 5952 text (lower case, the longest zero run as `::`) otherwise.
    public var description: String {
        if isIPv4 {
            return [24, 16, 8, 0].map { String((low >> UInt64($0)) & 0xFF) }.joined(separator: ".")
        }
        let groups = (0..<8).map { i -> UInt16 in
            let word = i < 4 ? high : low
            return UInt16(truncatingIfNeeded: word >> UInt64(48 - 16 * (i % 4)))
        }
        var bestStart = -1, bestLen = 0, i = 0
        while i < 8 {
            guard groups[i] == 0 else { i += 1; continue }
            let start = i
            while i < 8 && groups[i] == 0 { i += 1 }
            if i - start > bestLen, i - start >= 2 { bestStart = start; bestLen = i - start }
        }
        func hex(_ r: Range<Int>) -> String { groups[r].map { String($0, radix: 16) }.joined(separator: ":") }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLen)..<8)
    }

    /// Parses a plain IPv4 dotted quad (four decimal parts 0–255, no leading zeros) or an
    /// RFC 4291 IPv6 text address (optionally with a dotted-quad tail; no zone, no brackets).
    /// Nothing else: `127.1`, `0x7f000001` and `0177.0.0.1` are not addresses here.
    public init?(parsing text: String) {
        if let v4 = IPv4Text.parse(text) {
            self.init(high: 0, low: 0x0000_FFFF_0000_0000 | UInt64(v4))
        } else if let v6 = IPv6Text.parse(text) {
            self.init(bytes: v6)
        } else {
            return nil
        }
    }
}

/// An address range: `10.0.0.0/8`, `fc00::/7`, or one address (`/32`, `/128` implied).
/// IPv4 ranges are held over the IPv4-mapped space, so they match mapped IPv6 spellings too.
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    /// Over the 128-bit form: an IPv4 `/8` is 104.
    public let bits: Int

    public init(network: IPAddress, bits: Int) {
        self.bits = bits
        self.network = network.masked(bits)
    }

    /// Parses `ADDRESS[/LEN]`; the address as `IPAddress(parsing:)` reads it. Bits set below
    /// the prefix are refused (`10.1.0.0/8` is almost always a typo for something else).
    public init(parsing text: String) throws(SecurityConfigError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parsing: String(parts[0])) else {
            throw SecurityConfigError(key: "egress", "\"\(text)\" is not an IPv4 or IPv6 address or range "
                + "(write 10.0.0.0/8, 192.168.1.7 or fc00::/7)")
        }
        let width = address.isIPv4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard let n = Int(parts[1]), parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber),
                  (0...width).contains(n), parts[1].count <= 3
            else {
                throw SecurityConfigError(key: "egress", "\"\(text)\": the prefix length must be 0...\(width)")
            }
            length = n
        }
        let bits = address.isIPv4 ? 96 + length : length
        guard address.masked(bits) == address else {
            throw SecurityConfigError(key: "egress", "\"\(text)\" has bits set past its /\(length) prefix "
                + "(the range starts at \(CIDR(network: address, bits: bits).networkText))")
        }
        self.init(network: address, bits: bits)
    }

    public func contains(_ a: IPAddress) -> Bool { a.masked(bits) == network }

    private var networkText: String { network.description }

    public var description: String {
        network.isIPv4 && bits >= 96 ? "\(network)/\(bits - 96)" : "\(network)/\(bits)"
    }
}
