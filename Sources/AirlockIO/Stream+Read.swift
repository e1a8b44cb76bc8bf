// Public: the @inlinable input accessors (inputLength, withInput) call libevent directly.
public import CLibevent
import AirlockWire   // ByteClass.typed
import CLiburing   // iovec (sys/uio.h) is defined in the module of the first header that includes it
import Glibc

/// Input: what the owner reads, and how the stream reads the socket. Small reads (requests,
/// heads, small bodies: the common case) go into the loop's scratch buffer and are parsed
/// there in place (`staged`); after a read fills the scratch, reads go straight into
/// reserved input space until one comes back small again. TLS reads decrypt into reserved
/// input space.
extension Stream {
    @inlinable
    public var inputLength: Int { staged.count + evbuffer_get_length(input) }

    /// Calls `body` with the first `min(max, inputLength)` input bytes made contiguous.
    @inlinable
    public func withInput<R, E: Error>(max: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        if staged.count > 0 {
            return try body(UnsafeRawBufferPointer(rebasing: staged.prefix(Swift.min(max, staged.count))))
        }
        let n = Swift.min(max, evbuffer_get_length(input))
        if n == 0 { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let p = evbuffer_pullup(input, n)
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }

    /// Appends a copy of the first `min(n, inputLength)` input bytes to `bytes`, leaving the
    /// input as it is: one copy per chain, where `withInput` would first make the bytes
    /// contiguous (a copy of its own inside libevent for input in several chains) and a raw
    /// buffer appends byte by byte. For the response cache's copy of a body it relays.
    public func copyInput(_ n: Int, appendingTo bytes: inout [UInt8]) {
        if staged.count > 0 {
            bytes.append(contentsOf: ByteClass.typed(UnsafeRawBufferPointer(rebasing: staged.prefix(Swift.min(n, staged.count)))))
            return
        }
        let want = Swift.min(n, evbuffer_get_length(input))
        guard want > 0 else { return }
        let complete = withUnsafeTemporaryAllocation(of: iovec.self, capacity: Self.copyIOVecs) { v -> Bool in
            let chains = Int(evbuffer_peek(input, want, nil, v.baseAddress, Int32(Self.copyIOVecs)))
            guard chains <= Self.copyIOVecs else { return false }   // more chains than vectors: the slow way
            var left = want
            for k in 0..<chains where left > 0 {
                let take = Swift.min(left, v[k].iov_len)
                bytes.append(contentsOf: ByteClass.typed(UnsafeRawBufferPointer(start: v[k].iov_base, count: take)))
                left -= take
            }
            return true
        }
        if !complete { withInput(max: want) { bytes.append(contentsOf: ByteClass.typed($0)) } }
    }

    /// Vectors `copyInput` peeks the input's chains into.
    static let copyIOVecs = 16

    public func drainInput(_ n: Int) {
        guard n > 0 else { return }
        if staged.count > 0 {
            staged = UnsafeRawBufferPointer(rebasing: staged.dropFirst(Swift.min(n, staged.count)))
            return
        }
        evbuffer_drain(input, n)
        if !readArmed { updateReadEvent() }
    }

    /// Moves `n` input bytes to `other`'s output: small amounts by copy, so they join the
    /// head already queued there and go out in one `send`; larger ones by relinking chains,
    /// without copying.
    public func moveInput(_ n: Int, to other: Stream) {
        guard n > 0 else { return }
        if staged.count > 0 {
            let take = Swift.min(n, staged.count)
            _ = evbuffer_add(other.writableOutput(), staged.baseAddress, take)
            staged = UnsafeRawBufferPointer(rebasing: staged.dropFirst(take))
        } else if n <= Self.copyMoveLimit {
            let scratch = loop.moveScratch
            _ = evbuffer_copyout(input, scratch.baseAddress, n)
            evbuffer_drain(input, n)
            _ = evbuffer_add(other.writableOutput(), scratch.baseAddress, n)
        } else {
            evbuffer_remove_buffer(input, other.writableOutput(), n)
        }
        other.markDirty()
        if !readArmed { updateReadEvent() }
    }

    /// Reads what the socket holds now, as if it had signalled readable (the delegate gets
    /// the bytes, or the EOF): for an owner that must not decide a connection is idle while
    /// a request sits in the kernel's buffer. Does nothing while reading is paused.
    public func readNow() {
        guard state == .open, fd >= 0, wantRead, evbuffer_get_length(input) < readHighWatermark,
              spliceOut == nil || spliceReady else { return }
        onReadable(Int16(airlock_ev_read()))
    }

    func onReadable(_ what: Int16) {
        if state == .handshaking {
            handshakeEvent(what)
            return
        }
        if what & airlock_ev_timeout() != 0 {
            if state == .lingering { close() } else { delegate?.stream(self, event: .readTimeout) }
            return
        }
        if spliceOut != nil && state == .open {
            spliceReadable()
            return
        }
        // Bulk transfers: keep reading while reads come back full, up to the high watermark.
        var n = 0
        var total = 0
        var reads = 0
        repeat {
            n = readOnce()
            if n > 0 { total += n }
            reads += 1
        } while !spliceExpected && moreToRead(n) && reads < 8 && evbuffer_get_length(input) < readHighWatermark
        let readErrno = errno
        if state == .lingering {
            evbuffer_drain(input, evbuffer_get_length(input))
            if n == 0 || (n < 0 && readErrno != EAGAIN && readErrno != EINTR) { close() }
            return
        }
        if total > 0 {
            if evbuffer_get_length(input) >= readHighWatermark { updateReadEvent() }
            // TLS bytes already read from the socket (decrypted or not) fire no socket event:
            // come back for them while reading is armed (under the high watermark; once it is
            // armed again, `updateReadEvent` comes back for them), and for the end that
            // followed them.
            if let t = tlsSession, n == -2 || n == 0 || (readArmed && t._withUnsafeGuaranteedRef({ $0.hasPending })) {
                event_active(readEvent, Int32(airlock_ev_read()), 0)
            }
            delegate?.streamReadable(self)
            unstage()
            // A close that arrived with the data is seen on the next read.
            return
        }
        if n == -2 {
            fail(.error(tls?.readFailure ?? ""))
        } else if n == 0 {
            // Peer closed its side: stop reading; output may still be written.
            state = .eof
            updateReadEvent()
            delegate?.stream(self, event: .eof)
        } else if readErrno != EAGAIN && readErrno != EINTR {
            fail(.error(String(cString: strerror(readErrno))))
        }
    }

    /// One read: > 0 bytes, 0 end of stream, -1 with errno set (EAGAIN: nothing now),
    /// -2 TLS failure (`TLSSession.readFailure`).
    private func readOnce() -> Int {
        if let t = tlsSession, state != .lingering || !t._withUnsafeGuaranteedRef({ $0.handshakeFailed }) {
            return t._withUnsafeGuaranteedRef { tlsReadOnce($0) }
        }
        if !bulkReads {
            let scratch = loop.readScratch
            let got = recv(fd, scratch.baseAddress, scratch.count, 0)
            if got > 0 {
                bulkReads = got == scratch.count
                if !bulkReads && state == .open && evbuffer_get_length(input) == 0 {
                    // Left in place for the owner (see `staged`); nothing follows this read.
                    staged = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(scratch)[..<got])
                } else {
                    _ = evbuffer_add(writableInput(), scratch.baseAddress, got)
                }
            }
            return got
        }
        var iov = (iovec(), iovec())
        let input = writableInput()
        let n: Int = withUnsafeMutablePointer(to: &iov) { p in
            p.withMemoryRebound(to: iovec.self, capacity: 2) { v in
                let count = evbuffer_reserve_space(input, Self.bulkReserve, v, 2)
                guard count >= 1 else { return -1 }
                let got = count == 1 ? recv(fd, v[0].iov_base, v[0].iov_len, 0) : readv(fd, v, count)
                if got > 0 {
                    var left = got
                    var used: Int32 = 0
                    while left > 0 && used < count {
                        let take = Swift.min(left, v[Int(used)].iov_len)
                        v[Int(used)].iov_len = take
                        left -= take
                        used += 1
                    }
                    evbuffer_commit_space(input, v, used)
                } else {
                    evbuffer_commit_space(input, nil, 0)
                }
                return got
            }
        }
        if n >= 0 && n < Self.readChunk / 4 { bulkReads = false }
        return n
    }

    /// One SSL_read into reserved space: > 0 bytes, 0 clean close (close_notify),
    /// -1 with errno EAGAIN (nothing now), -2 failure or close without close_notify.
    private func tlsReadOnce(_ tls: TLSSession) -> Int {
        var iov = iovec()
        let input = writableInput()
        guard evbuffer_reserve_space(input, Self.readChunk, &iov, 1) >= 1 else { return -1 }
        let r = tls.read(into: iov.iov_base, count: Swift.min(iov.iov_len, Self.readChunk))
        // Reading can make OpenSSL write (a KeyUpdate answer, an alert): send it.
        if tls.hasWireOutput { markDirty() }
        if r > 0 {
            iov.iov_len = r
            evbuffer_commit_space(input, &iov, 1)
            return r
        }
        evbuffer_commit_space(input, nil, 0)
        switch r {
        case TLSSession.wantRead:
            errno = EAGAIN
            return -1
        case TLSSession.wantWrite:
            armWrite(true)
            errno = EAGAIN
            return -1
        case TLSSession.closed:
            return 0
        default:
            return -2
        }
    }

    /// Keeps what the owner left of a staged read: the scratch buffer is the next read's.
    private func unstage() {
        guard staged.count > 0 else { return }
        if state == .open || state == .eof {
            _ = evbuffer_add(writableInput(), staged.baseAddress, staged.count)
        }
        staged = UnsafeRawBufferPointer(start: nil, count: 0)
        if readArmed && evbuffer_get_length(input) >= readHighWatermark { updateReadEvent() }
    }

    /// Whether another read may find data now: a full plain read, or TLS bytes OpenSSL
    /// already holds (otherwise the socket's own readiness brings us back, and an extra
    /// read would only return EAGAIN).
    private func moreToRead(_ n: Int) -> Bool {
        if let t = tlsSession { return n > 0 && t._withUnsafeGuaranteedRef { $0.hasPending } }
        return n >= (bulkReads ? Self.bulkReserve : Self.readChunk)
    }
}
