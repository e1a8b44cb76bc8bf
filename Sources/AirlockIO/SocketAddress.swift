import CLibevent
import Glibc

/// An IPv4 or IPv6 socket address (sockaddr_storage), printable as "1.2.3.4:80" / "[::1]:80".
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    init?(_ sa: UnsafePointer<sockaddr>, length: Int) {
        guard length <= MemoryLayout<sockaddr_storage>.size else { return nil }
        var st = sockaddr_storage()
        withUnsafeMutableBytes(of: &st) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: length))
        }
        self.init(storage: st, length: socklen_t(length))
    }

    /// Parses a numeric IPv4 or IPv6 literal (IPv6 with or without brackets). No DNS.
    public init?(ipLiteral host: String, port: UInt16) {
        var h = host
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        var st = sockaddr_storage()
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
            self.init(storage: st, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        } else if inet_pton(AF_INET6, h, &v6) == 1 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            sin6.sin6_addr = v6
            withUnsafeBytes(of: &sin6) { src in
                withUnsafeMutableBytes(of: &st) { $0.copyMemory(from: src) }
            }
            self.init(storage: st, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            return nil
        }
    }

    public var family: Int32 { Int32(storage.ss_family) }

    public var port: UInt16 {
        get {
            var st = storage
            return withUnsafePointer(to: &st) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        }
        set {
            withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = newValue.bigEndian }
            }
        }
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
