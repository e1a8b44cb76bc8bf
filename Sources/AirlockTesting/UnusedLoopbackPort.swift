import Foundation
import Glibc

/// A port on 127.0.0.1 with nothing bound to it, for a test that has something listen there
/// later (an Airlock's `listen:`, an admin port) or that needs "upstream refused".
///
/// The port is taken below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`, 32768
/// and up by default), where no outgoing connection is ever given a local port: a port from
/// `bind(:0)` is an ephemeral one, and a connection made in between (a client, an upstream
/// connection) could be given it as its own local port, so that a later `bind` of it fails
/// with "Address already in use" (the README walkthrough's fifth Airlock did, once). Each call in
/// this process gives another port (they go round the range in turn from a random start), and
/// each is checked free by binding it. Falls back to `bind(:0)` if none below the range is free.
public func unusedLoopbackPort() -> UInt16 {
    PortsBelowEphemeralRange.shared.next() ?? ephemeralLoopbackPort()
}

private final class PortsBelowEphemeralRange: @unchecked Sendable {
    static let shared = PortsBelowEphemeralRange()
    private let lock = NSLock()
    private let range: ClosedRange<Int>
    private var cursor: Int

    private init() {
        // Ports from 10000 up to the start of the ephemeral range (default 32768).
        let low = kernelSetting("net/ipv4/ip_local_port_range")?.first ?? 32768
        let upper = max(10_001, min(low, 65536) - 1)
        range = 10_000...upper
        cursor = Int.random(in: range)
    }

    func next() -> UInt16? {
        lock.withLock {
            for _ in 0..<min(range.count, 2_000) {
                cursor = cursor >= range.upperBound ? range.lowerBound : cursor + 1
                let port = UInt16(cursor)
                if Self.isFree(port) { return port }
            }
            return nil
        }
    }

    /// Nothing bound to it now (a listener, a connection's local end; TIME_WAIT left over from an
    /// earlier test counts as bound, as it does to a listener without SO_REUSEADDR).
    private static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = Socket.loopbackAddress(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// bind(:0), read the port, close: a port from the ephemeral range.
private func ephemeralLoopbackPort() -> UInt16 {
    guard let fds = try? Descriptors.make("socket", {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        return fd >= 0 ? [fd] : nil
    }) else { return 9 }  // discard port: nothing listens there on a test machine
    let fd = fds[0]
    defer { close(fd) }
    var address = Socket.loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { return 9 }
    return Socket.localPort(fd)
}
