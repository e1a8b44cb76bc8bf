import CLibevent
import CLiburing   // iovec (sys/uio.h) is defined in the module of the first header that includes it
import Glibc

/// Output: what the owner queues, and how it reaches the socket. Written through at the
/// end of each loop iteration (`flush`, or the loop's batched `queueFlush` steps through
/// `SendRing`); the write event is armed only while the kernel does not take everything.
/// A TLS stream's output is encrypted into its session's `wire` first, then written the same way.
extension Stream {
    /// Bytes queued and not yet taken by the kernel (for TLS: plaintext plus ciphertext).
    /// With a splice under way, the bytes in the inbound pipe count too.
    public var outputLength: Int {
        let queued = wire == output ? evbuffer_get_length(output) : evbuffer_get_length(output) + evbuffer_get_length(wire)
        guard let p = spliceIn else { return queued }
        return queued + p.pending
    }

    public func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let output = writableOutput()
        bytes.withUnsafeBytes { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
        markDirty()
    }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        _ = evbuffer_add(writableOutput(), bytes.baseAddress, bytes.count)
        markDirty()
    }

    func markDirty() {
        if !isDirty && !writeArmed && state != .connecting && state != .handshaking {
            isDirty = true
            loop.markDirty(self)
        }
    }

    /// Writes queued output to the socket now; what the kernel does not take waits for
    /// the write event. Called by the loop at the end of each iteration.
    func flush() {
        isDirty = false
        guard !writeArmed, outputMayGo, outputLength > 0 else { return }
        writeOut()
    }

    /// Whether output may be written now: the socket is open and connected (TLS: past the
    /// handshake), and the stream is not lingering or closed.
    private var outputMayGo: Bool {
        guard fd >= 0 else { return false }
        switch state {
        case .open, .eof, .flushing: return true
        case .connecting, .handshaking, .lingering, .closed: return false
        }
    }

    /// The loop's batched flush (`EventLoop.flushDirty`), step 1: queues this stream's
    /// bytes for the socket (a TLS stream's encrypted first) on `ring`, up to
    /// `SendRing.maxBuffers` chains in one send. Returns false when the stream must be
    /// flushed on its own instead (`flush`: output in more chains, or an encryption failure to
    /// report). Runs no callback, so nothing can touch the queued bytes before the ring is
    /// submitted.
    func queueFlush(on ring: SendRing) -> Bool {
        isDirty = false
        guard !writeArmed, outputMayGo else { return true }
        if spliceIn != nil { return false }   // the pipe goes first, in `flush`
        // TLS: encrypt first (into `wire`; OpenSSL calls nothing of ours but WireBIO).
        // A failure is kept for `flush`, which reports it.
        if let t = tlsSession, !t._withUnsafeGuaranteedRef({ encryptQueued($0) }) {
            return false
        }
        // evbuffer_peek with a negative length fills at most the vectors it is given and
        // returns how many it filled: the chains' lengths summing short of the output's says
        // there are more.
        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: SendRing.maxBuffers) { v in
            let chains = Int(evbuffer_peek(wire, -1, nil, v.baseAddress, Int32(SendRing.maxBuffers)))
            if chains == 0 { return true }
            if chains == 1 {
                ring.add(self, fd: fd, buffer: v[0])
                return true
            }
            var peeked = 0
            for i in 0..<chains { peeked += v[i].iov_len }
            if peeked < evbuffer_get_length(wire) { return false }
            ring.add(self, fd: fd, buffers: UnsafeBufferPointer(rebasing: v[..<chains]))
            return true
        }
    }

    /// Step 2: what the kernel took leaves the output. Runs no callback either, for every
    /// stream of the batch before any step 3 (a callback may write to, or close, a stream
    /// whose result is not yet accounted).
    func queuedFlushSent(_ result: Int) {
        if result > 0 { evbuffer_drain(wire, result) }
    }

    /// Step 3: the write's consequences, as after a plain `send` (`writeOut`).
    func queuedFlushDone(_ result: Int) {
        guard outputMayGo else { return }
        if result == SendRing.notSent {
            if !writeArmed && outputLength > 0 { writeOut() }
            return
        }
        afterPlainWrite(result, error: result < 0 ? Int32(-result) : 0)
    }

    /// One write attempt; arms or disarms the write event and reports progress.
    func writeOut() {
        if let p = spliceIn, p.pending > 0 {
            guard writePipe(p) else { return }
            if p.pending > 0 {   // the pipe goes first: output queued after it waits
                afterWrite()
                return
            }
        }
        if let t = tlsSession, !t._withUnsafeGuaranteedRef({ encrypt($0) }) { return }
        let n = plainWrite()
        afterPlainWrite(n, error: n < 0 ? errno : 0)
    }

    private func afterPlainWrite(_ n: Int, error: Int32) {
        if n < 0 && error != EAGAIN && error != EINTR {
            armWrite(false)
            fail(.error(String(cString: strerror(error))))
            return
        }
        afterWrite()
    }

    private func afterWrite() {
        if spliceIn != nil { inboundPipeWritten() }
        releaseOutputIfEmpty()
        let left = outputLength
        armWrite(left > 0)
        if state == .flushing {
            if left == 0 { startLingering() }
            return
        }
        if left <= writeLowWatermark { delegate?.streamWritable(self) }
    }

    /// One plain write of up to `writeIOVecs` output chains: `send` for one chain (the
    /// usual small response or request), `writev` for more. Returns the kernel's result.
    func plainWrite() -> Int {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: Self.writeIOVecs) { v in
            let buffer = wire
            let chains = Int(evbuffer_peek(buffer, -1, nil, v.baseAddress, Int32(Self.writeIOVecs)))
            let count = Swift.min(chains, Self.writeIOVecs)
            guard count > 0 else { return 0 }
            let n = count == 1
                ? send(fd, v[0].iov_base, v[0].iov_len, Int32(MSG_NOSIGNAL))
                : writev(fd, v.baseAddress, Int32(count))
            if n > 0 { evbuffer_drain(buffer, n) }
            return n
        }
    }

    /// Encrypts the queued plaintext, then queues close_notify behind it (`closeAfterFlush`
    /// on a TLS stream); a failure fails the stream.
    func queueCloseNotify() {
        guard let tls, state != .handshaking, encrypt(tls) else { return }
        _ = tls.shutdown()
    }

    /// `queueFlush`'s encryption: a failure is kept for `flush`, which reports it. Runs no callback.
    private func encryptQueued(_ tls: TLSSession) -> Bool {
        guard let why = tls.encrypt(output) else { return true }
        tls.encryptFailure = why
        return false
    }

    /// Encrypts all queued plaintext into the session's `wire` (or reports the failure a
    /// batched write met); on failure the stream fails, and false is returned.
    private func encrypt(_ tls: TLSSession) -> Bool {
        let why = tls.encryptFailure ?? tls.encrypt(output)
        tls.encryptFailure = nil
        guard let why else { return true }
        armWrite(false)
        fail(.error(why))
        return false
    }
}
