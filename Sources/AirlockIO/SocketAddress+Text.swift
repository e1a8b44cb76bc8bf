public import AirlockWire
import CLibevent
import Glibc

extension SocketAddress {
    /// `description`'s UTF-8 ("1.2.3.4:80", "[::1]:80") appended to `out`: IPv4 written in
    /// place from the address bytes, without `inet_ntop`'s sprintf and without a String (access
    /// records print two addresses per request); IPv6 through `description`.
    public func append(to out: inout TextBuilder) {
        guard family == AF_INET else { return out.append(string: description) }
        out.append(upTo: Self.maxIPv4Description) { writeIPv4Description(to: $0) }
    }

    /// "255.255.255.255:65535".
    static let maxIPv4Description = 21

    /// For an IPv4 address: `description`'s bytes written at `p` (which has room for
    /// `maxIPv4Description`), and their count.
    private func writeIPv4Description(to p: UnsafeMutablePointer<UInt8>) -> Int {
        // sockaddr_in's address sits where sockaddr_in6's flow info does (offset 4).
        let address = UInt32(bigEndian: storage.sin6_flowinfo)
        var n = 0
        @inline(__always) func put(_ value: UInt32) {
            if value >= 10_000 { p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10_000); n += 1 }
            if value >= 1_000 { p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 1_000 % 10); n += 1 }
            if value >= 100 { p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 100 % 10); n += 1 }
            if value >= 10 { p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10 % 10); n += 1 }
            p[n] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
            n += 1
        }
        put(address >> 24)
        p[n] = UInt8(ascii: ".")
        n += 1
        put((address >> 16) & 0xFF)
        p[n] = UInt8(ascii: ".")
        n += 1
        put((address >> 8) & 0xFF)
        p[n] = UInt8(ascii: ".")
        n += 1
        put(address & 0xFF)
        p[n] = UInt8(ascii: ":")
        n += 1
        put(UInt32(port))
        return n
    }
}
