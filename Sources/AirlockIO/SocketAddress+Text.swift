import Glibc

extension SocketAddress {
    /// `description`'s UTF-8 ("1.2.3.4:80", "[::1]:80") appended to `out`. IPv4 is formatted
    /// from the address bytes, without `inet_ntop`'s sprintf and without a String: access
    /// records print two addresses per request. IPv6 goes through `description`.
    public func appendDescription(to out: inout [UInt8]) {
        guard family == AF_INET else {
            out.append(contentsOf: description.utf8)
            return
        }
        var st = storage
        let address = withUnsafePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
        }
        for shift in [24, 16, 8, 0] as [UInt32] {
            Self.appendDecimal(Int((address >> shift) & 0xFF), to: &out)
            out.append(shift == 0 ? UInt8(ascii: ":") : UInt8(ascii: "."))
        }
        Self.appendDecimal(Int(port), to: &out)
    }

    private static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        var divisor = 1
        while value / divisor >= 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
