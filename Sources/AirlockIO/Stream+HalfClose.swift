import CLibevent   // SHUT_WR comes with its socket headers (as in Stream+Close)
import Glibc

/// Half-close for raw relays (CONNECT tunnels): passing a peer's EOF on without closing.
extension Stream {
    /// `shutdown(SHUT_WR)` on the socket: the peer reads EOF once everything queued before has
    /// reached it; this side keeps reading. Call only with the output drained
    /// (`outputLength == 0`), on a plain (not TLS) stream: a queued byte would be lost.
    public func shutdownOutput() {
        guard fd >= 0, state == .open || state == .eof, tlsSession == nil else { return }
        shutdown(fd, Int32(SHUT_WR))
    }
}
