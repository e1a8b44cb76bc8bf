import CLibevent
import Glibc

/// Ending a stream: at once (`close`), after its output has gone (`closeAfterFlush`, then
/// lingering so the peer's late bytes do not turn into a reset), or on failure (`fail`).
extension Stream {
    /// Closes the socket at once; unsent output is dropped.
    public func close() {
        guard state != .closed else { return }
        state = .closed
        let closing = self.closing
        closing?.lingerTimer?.cancel()
        closing?.lingerTimer = nil
        readArmed = false
        writeArmed = false
        if let e = readEvent { event_del(e) }
        if let e = writeEvent { event_del(e) }
        if spliceOut != nil || spliceIn != nil { endSplicing() }
        // close_notify into the session's wire: one try to send it.
        if let tls, tls.shutdown(), fd >= 0 { _ = plainWrite() }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        notifyFlushed()
        if let r = closing?.selfRetain {
            closing?.selfRetain = nil
            r.release()
        }
    }

    /// Sends what is queued, then half-closes and discards whatever the peer still sends
    /// for up to `linger`, so an error response is not destroyed by a TCP reset.
    /// `onFlushed` runs once when the output has gone out (or the stream closed first).
    ///
    /// The flush may take as long as the owner's write timeout (or `linger`, when that is
    /// shorter or there is none), and `linger` without progress: a slow reader gets the whole
    /// answer queued for it, a peer that stopped reading is closed. (The linger used to be
    /// counted from here, so whatever was not sent within 2 s was cut off: the tail of a
    /// response to a slow client, a large admin answer.)
    public func closeAfterFlush(linger: Duration = .seconds(2), onFlushed: (() -> Void)? = nil) {
        guard state == .open || state == .eof, fd >= 0 else {
            onFlushed?()
            close()
            return
        }
        stopSplice()   // reads from here on are discarded; the inbound pipe still goes out
        let closing = Closing(onFlushed: onFlushed, linger: linger)
        self.closing = closing
        // After a failed TLS handshake the state is .eof, but the peer may well still be
        // sending (garbage instead of a ClientHello): linger as for an open stream.
        let handshakeFailed = tls?.handshakeFailed == true
        let peerClosed = state == .eof && !handshakeFailed
        state = .flushing
        closing.selfRetain = Unmanaged.passRetained(self)
        delegate = nil
        let t = Timer(loop: loop) { [unowned self] in self.close() }
        t.schedule(after: Swift.max(linger, timeouts.write ?? linger))
        closing.lingerTimer = t
        timeouts = StreamTimeouts(read: timeouts.read, write: linger,
                                  readTV: timeouts.readTV, writeTV: loop.commonTimeout(linger))
        updateReadEvent()
        // TLS: the last records, then close_notify, leave before the TCP half-close.
        if tlsSession != nil && !handshakeFailed {
            queueCloseNotify()
            guard state == .flushing else { return }   // the encryption failed: closed
        }
        if outputLength == 0 {
            if peerClosed { close() } else { startLingering() }
        } else if !writeArmed {
            writeOut()
        }
    }

    func startLingering() {
        notifyFlushed()
        guard fd >= 0 else { return }
        state = .lingering
        if let closing { closing.lingerTimer?.schedule(after: closing.linger) }   // from now on
        shutdown(fd, Int32(SHUT_WR))
        evbuffer_drain(input, evbuffer_get_length(input))
        updateReadEvent()
    }

    private func notifyFlushed() {
        if let f = closing?.onFlushed {
            closing?.onFlushed = nil
            f()
        }
    }

    func fail(_ ev: StreamEvent) {
        switch state {
        case .open, .eof, .connecting, .handshaking:
            state = .eof
            updateReadEvent()
            armWrite(false)
            delegate?.stream(self, event: ev)
        case .flushing, .lingering:
            close()
        case .closed:
            break
        }
    }
}
