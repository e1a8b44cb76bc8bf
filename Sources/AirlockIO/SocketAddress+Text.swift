import CLibevent
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
        // sockaddr_in's address sits where sockaddr_in6's flow info does (offset 4).
        let address = UInt32(bigEndian: storage.sin6_flowinfo)
        // "255.255.255.255:65535" is 21 bytes: written right to left, appended once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buf in
            var i = buf.count
            func put(_ value: UInt32) {
                var v = value
                repeat {
                    i -= 1
                    buf[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
                    v /= 10
                } while v > 0
            }
            put(UInt32(port))
            i -= 1
            buf[i] = UInt8(ascii: ":")
            put(address & 0xFF)
            i -= 1
            buf[i] = UInt8(ascii: ".")
            put((address >> 8) & 0xFF)
            i -= 1
            buf[i] = UInt8(ascii: ".")
            put((address >> 16) & 0xFF)
            i -= 1
            buf[i] = UInt8(ascii: ".")
            put(address >> 24)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[i...]))
        }
    }
}
