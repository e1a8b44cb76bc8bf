import CLibevent
import Glibc

/// An IPv4 or IPv6 socket address, printable as "1.2.3.4:80" / "[::1]:80".
///
/// Held in a `sockaddr_in6` (28 bytes), which a `sockaddr_in` (16) fits inside: family and
/// port sit at the same offsets in both. Not a `sockaddr_storage` (128): every client
/// connection, exchange and upstream connection holds one or more.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    var storage: sockaddr_in6

    /// The length of the `sockaddr` inside: `sockaddr_in`'s for IPv4, `sockaddr_in6`'s otherwise.
    var length: socklen_t {
        socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
    }

    /// An IPv4 or IPv6 `sockaddr` of `length` bytes (nil for any other family, or a length
    /// too short for its family or longer than a `sockaddr_in6`).
    init?(_ sa: UnsafePointer<sockaddr>, length: Int) {
        let family = Int32(sa.pointee.sa_family)
        let needed = family == AF_INET ? MemoryLayout<sockaddr_in>.size
            : family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : Int.max
        guard length >= needed, needed <= MemoryLayout<sockaddr_in6>.size else { return nil }
        var st = sockaddr_in6()
        withUnsafeMutableBytes(of: &st) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: needed))
        }
        storage = st
    }

    /// Parses a numeric IPv4 or IPv6 literal (IPv6 with or without brackets). No DNS.
    public init?(ipLiteral host: String, port: UInt16) {
        var h = host
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        var st = sockaddr_in6()
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, h, &v4) == 1 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr = v4
            withUnsafeBytes(of: &sin) { src in
                withUnsafeMutableBytes(of: &st) { $0.copyMemory(from: src) }
            }
        } else if inet_pton(AF_INET6, h, &v6) == 1 {
            st.sin6_family = sa_family_t(AF_INET6)
            st.sin6_port = port.bigEndian
            st.sin6_addr = v6
        } else {
            return nil
        }
        storage = st
    }

    public var family: Int32 { Int32(storage.sin6_family) }

    public var port: UInt16 {
        get { UInt16(bigEndian: storage.sin6_port) }   // sin_port's offset too
        set { storage.sin6_port = newValue.bigEndian }
    }

    /// The address without the port: "127.0.0.1" or "::1".
    public var host: String {
        var st = storage
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        withUnsafePointer(to: &st) { p in
            if family == AF_INET {
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { s in
                    var a = s.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &a, &buf, socklen_t(buf.count))
                }
            } else {
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { s in
                    var a = s.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &a, &buf, socklen_t(buf.count))
                }
            }
        }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var isLoopback: Bool {
        if family == AF_INET { return host.hasPrefix("127.") }
        return host == "::1" || host.hasPrefix("::ffff:127.")
    }

    public var description: String {
        family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var st = storage
        return withUnsafePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.family == b.family && a.port == b.port && a.host == b.host
    }
}

extension SocketAddress {
    /// The address without the port, network order: 4 bytes for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        var st = storage
        return withUnsafePointer(to: &st) { p in
            if family == AF_INET {
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { s in
                    withUnsafeBytes(of: s.pointee.sin_addr) { Array($0) }
                }
            }
            return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { s in
                withUnsafeBytes(of: s.pointee.sin6_addr) { Array($0) }
            }
        }
    }

    /// Every address this machine's interfaces hold now (getifaddrs), IPv4 and IPv6, port 0:
    /// what a listener on a wildcard address answers on besides loopback.
    public static func interfaceAddresses() -> [SocketAddress] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0 else { return [] }
        defer { freeifaddrs(head) }
        var out: [SocketAddress] = []
        var p = head
        while let ifa = p {
            if let sa = ifa.pointee.ifa_addr {
                let family = Int32(sa.pointee.sa_family)
                let length = family == AF_INET ? MemoryLayout<sockaddr_in>.size
                    : family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : 0
                if length > 0, let a = SocketAddress(UnsafePointer(sa), length: length) { out.append(a) }
            }
            p = ifa.pointee.ifa_next
        }
        return out
    }
}
