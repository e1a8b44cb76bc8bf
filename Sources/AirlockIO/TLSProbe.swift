import CLibevent
import COpenSSL
import Glibc

/// A blocking TLS handshake for the `airlock pin` command (never used on an event loop):
/// connects, handshakes with SNI, and returns the chain the server presented.
public enum TLSProbe {
    public struct Result: Sendable {
        public let presented: [PeerCertificate]
        /// "ok" or OpenSSL's verify error against the system store (+ `caFile`) and `serverName`,
        /// at OpenSSL security level 2 (the gateway's default), so a weak chain does not read "ok".
        public let verification: String
        /// OpenSSL's `X509_V_ERR_*` code when verification failed; nil when it passed.
        public let verifyCode: Int32?
    }

    public static func fetch(host: String, port: UInt16, serverName: String, caFile: String?,
                             timeoutSeconds: Int = 10) throws -> Result {
        IORuntime.setUp()
        let addresses = try resolveBlocking(host: host, port: port)
        var fd: Int32 = -1
        var lastError = "no address"
        for a in addresses {
            let s = socket(a.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard s >= 0 else { continue }
            var tv = Glibc.timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<Glibc.timeval>.size))
            setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<Glibc.timeval>.size))
            if a.withSockaddr({ Glibc.connect(s, $0, $1) }) == 0 {
                fd = s
                break
            }
            lastError = "\(a): \(String(cString: strerror(errno)))"
            Glibc.close(s)
        }
        guard fd >= 0 else { throw IOError(.connect, "cannot connect to \(host):\(port): \(lastError)") }
        defer { Glibc.close(fd) }
        let context = try TLSClientContext(caFiles: caFile.map { [$0] } ?? [], pinnedAnchors: [])
        guard let ssl = SSL_new(context.ctx) else { throw IOError(.tls, "SSL_new failed") }
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        if SocketAddress(ipLiteral: serverName, port: 0) == nil {
            _ = airlock_SSL_set_tlsext_host_name(ssl, serverName)
        }
        guard SSL_connect(ssl) == 1 else {
            throw IOError(.tls, "TLS handshake with \(host):\(port) failed: \(TLSSession.opensslError(fallback: "handshake failed"))")
        }
        var presented: [PeerCertificate] = []
        var verification = "no certificate presented"
        var verifyCode: Int32?
        if let chain = SSL_get_peer_cert_chain(ssl) {
            for i in 0..<airlock_sk_X509_num(chain) {
                if let x = airlock_sk_X509_value(chain, i) { presented.append(PeerCertificate(x)) }
            }
            switch context.verify(peerChain: chain, anchors: .defaultTrust, hostname: serverName) {
            case .success: verification = "ok"
            case .failure(let e):
                verification = e.text
                verifyCode = e.code
            }
        }
        _ = SSL_shutdown(ssl)
        return Result(presented: presented, verification: verification, verifyCode: verifyCode)
    }

    static func resolveBlocking(host: String, port: UInt16) throws -> [SocketAddress] {
        if let a = SocketAddress(ipLiteral: host, port: port) { return [a] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0 else { throw IOError(.resolve, "\(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(res) }
        var out: [SocketAddress] = []
        var p = res
        while let ai = p {
            if let sa = ai.pointee.ai_addr, let a = SocketAddress(UnsafePointer(sa), length: Int(ai.pointee.ai_addrlen)) {
                out.append(a)
            }
            p = ai.pointee.ai_next
        }
        return out
    }
}
