import CLibevent
import COpenSSL
import Glibc

public enum StreamEvent: Sendable, Equatable {
    case connected
    case eof
    case error(String)
    case readTimeout
    case writeTimeout
    /// The TLS handshake failed (OpenSSL's reason).
    case tlsFailed(String)
}

/// How a connecting stream starts TLS once TCP is up.
public struct TLSSetup {
    public let context: TLSClientContext
    /// SNI name (omitted for IP literals).
    public let serverName: String
    /// A session to resume (from this worker's cache, same host and policy), or nil. The
    /// setup owns one reference to it (`TLSSessionCache.retainedSession`), which the stream
    /// releases once the handshake has taken its own, or when it closes without one.
    public let session: OpaquePointer?
    /// Offered each new session the server issues; return true to take ownership.
    public let onNewSession: (OpaquePointer) -> Bool

    public init(context: TLSClientContext, serverName: String, session: OpaquePointer?,
                onNewSession: @escaping (OpaquePointer) -> Bool) {
        self.context = context
        self.serverName = serverName
        self.session = session
        self.onNewSession = onNewSession
    }
}

/// Receives a stream's callbacks on the stream's loop.
public protocol StreamDelegate: AnyObject {
    func streamReadable(_ stream: Stream)
    /// The output buffer drained to the write low watermark.
    func streamWritable(_ stream: Stream)
    func stream(_ stream: Stream, event: StreamEvent)
}

/// A buffered, non-blocking TCP stream: a socket, an input and an output evbuffer, and
/// two libevent events. Payload moves between streams with `moveInput(_:to:)`: bulk by
/// relinking evbuffer chains (no copy), small amounts by copy into the chain the head
/// already sits in, so a small response leaves in one `send`.
///
/// Output is written through: what a loop iteration queues is written straight to the
/// socket when the iteration ends (`flush`; upstream-bound streams first), and the write
/// event is armed only while the kernel does not take everything. Reads are one `recv`,
/// no FIONREAD probe: small ones into the loop's scratch buffer, where the owner parses
/// them in place (`staged`), bulk ones straight into reserved evbuffer space.
public final class Stream {
    public unowned(unsafe) var delegate: (any StreamDelegate)?
    fileprivate let loop: EventLoop
    private var fd: Int32
    @usableFromInline let input: OpaquePointer
    /// Input not yet copied into `input`: during a read callback, the bytes one small read
    /// left in the loop's scratch buffer, when `input` was empty. The owner usually consumes
    /// them all in the callback (a whole request or response head and a small body), so
    /// they never get a buffer of their own; what is left is appended to `input` when the
    /// callback returns. Empty at every other time, and always while `input` is not empty.
    @usableFromInline var staged = UnsafeRawBufferPointer(start: nil, count: 0)
    private let output: OpaquePointer
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    private var state: State
    private var wantRead = true            // the owner wants input
    private var readArmed = false          // the read event is added
    private var writeArmed = false         // the write event is added
    private var isDirty = false
    /// Streams we connected (to upstreams) are flushed before accepted ones (to clients):
    /// see `EventLoop.flushDirty`.
    let flushesFirst: Bool
    /// Reads go straight into reserved input space (a bulk transfer is under way).
    private var bulkReads = false
    /// Timeouts as libevent common timeouts (computed when set, not per re-arm).
    private var readTimeout: Duration? { didSet { if !timeoutsPrecomputed { readTV = readTimeout.map(loop.commonTimeout) } } }
    private var writeTimeout: Duration? { didSet { if !timeoutsPrecomputed { writeTV = writeTimeout.map(loop.commonTimeout) } } }
    private var timeoutsPrecomputed = false
    private var readTV: timeval?
    private var writeTV: timeval?
    private var readHighWatermark = Int.max
    private var writeLowWatermark = 0
    private var lingerTimer: Timer?
    /// While flushing and lingering the stream keeps itself alive; its owner is gone.
    private var selfRetain: Unmanaged<Stream>?
    private var onFlushed: (() -> Void)?
    private var pendingConnectError: Int32 = 0
    private var tlsSetup: TLSSetup?
    private var ssl: OpaquePointer?
    /// After the TLS handshake: the ciphertext OpenSSL wrote (through `WireBIO`) and the
    /// socket has not taken yet. Written like a plain stream's output, so TLS streams join
    /// the loop's batched writes. Nil before the handshake and on plain streams.
    private var tlsWire: OpaquePointer?
    /// An encryption failure met while queueing a batched write, reported by `flush`.
    private var encryptFailure: String?
    private var tlsError = ""
    private var resumeSessionReleased = false

    private enum State {
        case connecting      // → .handshaking, .open or .closed
        case handshaking     // TLS handshake in progress → .open or .closed
        case open            // → .flushing, .eof or .closed
        case eof             // peer closed its side; output may still go → .closed
        case flushing        // output draining, then shutdown(SHUT_WR) → .lingering
        case lingering       // reading and discarding until EOF or timeout → .closed
        case closed          // final
    }

    static let readChunk = 32 * 1024
    /// What a bulk read reserves: a 32 KiB allocation once libevent adds its chain header
    /// (asking for a full 32 KiB would allocate 64 KiB and use half).
    static let bulkReserve = readChunk - 128

    /// Wraps an accepted, connected, non-blocking socket.
    public init(loop: EventLoop, fd: Int32) {
        self.loop = loop
        self.fd = fd
        flushesFirst = false
        input = evbuffer_new()
        output = evbuffer_new()
        state = .open
        makeEvents()
        updateReadEvent()
    }

    /// Starts a non-blocking connect; `.connected` or an error event follows (never
    /// before this initializer returns). `timeout` bounds the connect.
    public init(loop: EventLoop, connectingTo address: SocketAddress, timeout: Duration, tls: TLSSetup? = nil) throws {
        self.loop = loop
        self.tlsSetup = tls
        flushesFirst = true
        input = evbuffer_new()
        output = evbuffer_new()
        state = .connecting
        fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            // Fully initialized: deinit runs on this throw and frees the buffers (and the
            // session reference), so nothing is freed here.
            throw IOError.errno(.socket, "socket")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc != 0 && errno != EINPROGRESS {
            pendingConnectError = errno
        }
        makeEvents()
        // Completion (or an immediate failure) is reported from the loop, never re-entrantly.
        writeTimeout = timeout
        writeTV = loop.commonTimeout(timeout)   // observers do not run in an initializer
        armWrite(true)
        if pendingConnectError != 0 || rc == 0 { event_active(writeEvent, Int32(airlock_ev_write()), 0) }
    }

    deinit {
        if let s = ssl { SSL_free(s) }
        if let w = tlsWire { evbuffer_free(w) }
        releaseResumeSession()
        if let e = readEvent { event_free(e) }
        if let e = writeEvent { event_free(e) }
        if fd >= 0 { Glibc.close(fd) }
        evbuffer_free(input)
        evbuffer_free(output)
    }

    private func makeEvents() {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, fd, airlock_ev_read() | airlock_ev_persist(), streamReadCallback, ctx)
        writeEvent = event_new(loop.base, fd, airlock_ev_write() | airlock_ev_persist(), streamWriteCallback, ctx)
    }

    // MARK: TLS

    /// The chain the server presented (leaf first), or nil for plain TCP.
    public var tlsPeerChain: [PeerCertificate]? {
        guard let s = ssl, let chain = SSL_get_peer_cert_chain(s) else { return nil }
        var out: [PeerCertificate] = []
        for i in 0..<airlock_sk_X509_num(chain) {
            if let x = airlock_sk_X509_value(chain, i) { out.append(PeerCertificate(x)) }
        }
        return out
    }

    public var tlsSessionReused: Bool { ssl.map { SSL_session_reused($0) == 1 } ?? false }

    /// Runs one X509 validation of the presented chain (see TLSClientContext.verify).
    public func tlsVerify(anchors: TLSClientContext.Anchors, hostname: String?)
        -> Result<[PeerCertificate], TLSClientContext.VerifyError> {
        guard let s = ssl, let setup = tlsSetup, let chain = SSL_get_peer_cert_chain(s) else {
            return .failure(.init(code: -1, text: "no TLS peer chain"))
        }
        return setup.context.verify(peerChain: chain, anchors: anchors, hostname: hostname)
    }

    func tlsNewSession(_ session: OpaquePointer) -> Bool {
        tlsSetup?.onNewSession(session) ?? false
    }

    /// When the TCP connection came up and the TLS handshake began (0 on plain streams): the
    /// split between connect and TLS time in the gateway's metrics.
    public private(set) var handshakeStartedAt: UInt64 = 0

    private func startHandshake() {
        guard let setup = tlsSetup, let s = SSL_new(setup.context.ctx) else {
            fail(.tlsFailed("SSL_new failed"))
            return
        }
        ssl = s
        _ = airlock_SSL_set_app_data(s, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_fd(s, fd)
        SSL_set_connect_state(s)
        let name = setup.serverName
        if SocketAddress(ipLiteral: name.hasPrefix("[") ? String(name.dropFirst().dropLast()) : name, port: 0) == nil {
            _ = airlock_SSL_set_tlsext_host_name(s, name)
        }
        if let session = setup.session { SSL_set_session(s, session) }   // takes its own reference
        releaseResumeSession()
        handshakeStartedAt = EventLoop.nowNanos()
        state = .handshaking
        continueHandshake()
    }

    /// Drops the setup's reference to the session to resume (at most once).
    private func releaseResumeSession() {
        if !resumeSessionReleased, let session = tlsSetup?.session {
            resumeSessionReleased = true
            SSL_SESSION_free(session)
        }
    }

    private func continueHandshake() {
        guard let s = ssl else { return }
        let r = SSL_do_handshake(s)
        if r == 1 {
            guard attachWireBIO(s) else {
                armWrite(false)
                if readArmed { event_del(readEvent); readArmed = false }
                state = .eof
                delegate?.stream(self, event: .tlsFailed("out of memory for the TLS write buffer"))
                return
            }
            state = .open
            armWrite(false)
            if readArmed { event_del(readEvent); readArmed = false }
            updateReadEvent()
            delegate?.stream(self, event: .connected)
            return
        }
        switch SSL_get_error(s, r) {
        case SSL_ERROR_WANT_READ:
            armWrite(false)
            if !readArmed { readArmed = true; add(readEvent, writeTV) }
        case SSL_ERROR_WANT_WRITE:
            armWrite(true)
        default:
            let why = Self.opensslError(fallback: "handshake failed")
            armWrite(false)
            if readArmed { event_del(readEvent); readArmed = false }
            state = .eof
            delegate?.stream(self, event: .tlsFailed(why))
        }
    }

    /// From now on OpenSSL writes records into `tlsWire` instead of the socket (reads
    /// still come straight from the socket). False when memory runs out.
    private func attachWireBIO(_ s: OpaquePointer) -> Bool {
        guard let method = WireBIO.method, let wire = evbuffer_new() else { return false }
        guard let bio = BIO_new(method) else {
            evbuffer_free(wire)
            return false
        }
        BIO_set_data(bio, UnsafeMutableRawPointer(wire))
        SSL_set0_wbio(s, bio)   // the socket BIO stays as the read BIO
        tlsWire = wire
        return true
    }

    /// A read or write event during the handshake: continue it, or fail it on timeout.
    private func handshakeEvent(_ what: Int16) {
        guard what & airlock_ev_timeout() == 0 else {
            if readArmed { event_del(readEvent); readArmed = false }
            armWrite(false)
            state = .eof
            delegate?.stream(self, event: .tlsFailed("handshake timed out"))
            return
        }
        continueHandshake()
    }

    static func opensslError(fallback: String) -> String {
        let e = ERR_get_error()
        ERR_clear_error()
        guard e != 0 else { return fallback }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(e, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: event arming

    private func add(_ ev: OpaquePointer?, _ timeout: timeval?) {
        if var tv = timeout {
            event_add(ev, &tv)
        } else {
            event_add(ev, nil)
        }
    }

    /// The read event is armed while the owner wants input, the input is under its high
    /// watermark, and the peer has not closed (or while lingering).
    private func updateReadEvent() {
        let should: Bool
        switch state {
        case .open: should = wantRead && evbuffer_get_length(input) < readHighWatermark
        case .lingering: should = true
        case .connecting, .handshaking, .eof, .flushing, .closed: should = false
        }
        if should && !readArmed {
            readArmed = true
            add(readEvent, state == .lingering ? nil : readTV)
        } else if !should && readArmed {
            readArmed = false
            event_del(readEvent)
        }
    }

    private func armWrite(_ on: Bool) {
        if on && !writeArmed {
            writeArmed = true
            add(writeEvent, writeTV)
        } else if !on && writeArmed {
            writeArmed = false
            event_del(writeEvent)
        }
    }

    // MARK: input

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
            _ = evbuffer_add(other.output, staged.baseAddress, take)
            staged = UnsafeRawBufferPointer(rebasing: staged.dropFirst(take))
        } else if n <= Self.copyMoveLimit {
            let scratch = loop.moveScratch
            _ = evbuffer_copyout(input, scratch.baseAddress, n)
            evbuffer_drain(input, n)
            _ = evbuffer_add(other.output, scratch.baseAddress, n)
        } else {
            evbuffer_remove_buffer(input, other.output, n)
        }
        other.markDirty()
        if !readArmed { updateReadEvent() }
    }

    public func setReading(_ on: Bool) {
        wantRead = on
        updateReadEvent()
    }

    /// Reading pauses while the input holds `bytes` or more.
    public func setReadHighWatermark(_ bytes: Int) {
        readHighWatermark = bytes
        updateReadEvent()
    }

    // MARK: output

    /// Bytes queued and not yet taken by the kernel (for TLS: plaintext plus ciphertext).
    public var outputLength: Int { evbuffer_get_length(output) + (tlsWire.map { evbuffer_get_length($0) } ?? 0) }

    /// What goes to the socket: `output`, or for TLS the ciphertext of it.
    private var wire: OpaquePointer { tlsWire ?? output }

    public func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
        markDirty()
    }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        _ = evbuffer_add(output, bytes.baseAddress, bytes.count)
        markDirty()
    }

    /// The write callback fires when the output drains to `bytes` or below.
    public func setWriteLowWatermark(_ bytes: Int) { writeLowWatermark = bytes }

    public func setTimeouts(read: Duration?, write: Duration?) {
        if read == readTimeout && write == writeTimeout { return }
        readTimeout = read
        writeTimeout = write
        rearmTimeouts()
    }

    /// The same with libevent's timevals already looked up (`EventLoop.timeouts`): for a
    /// connection that switches between two sets on every exchange (a pooled upstream).
    public func setTimeouts(_ t: StreamTimeouts) {
        if t.read == readTimeout && t.write == writeTimeout { return }
        timeoutsPrecomputed = true
        readTimeout = t.read
        writeTimeout = t.write
        readTV = t.readTV
        writeTV = t.writeTV
        timeoutsPrecomputed = false
        rearmTimeouts()
    }

    private func rearmTimeouts() {
        if readArmed { add(readEvent, state == .lingering ? nil : readTV) }
        if writeArmed { add(writeEvent, writeTV) }
    }

    private func markDirty() {
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
    /// bytes for the socket (a TLS stream's encrypted first) on `ring` when they are one
    /// chain. Returns false when the stream must be flushed on its own instead (`flush`:
    /// output in several chains, or an encryption failure to report). Runs no callback,
    /// so nothing can touch the queued bytes before the ring is submitted.
    func queueFlush(on ring: SendRing) -> Bool {
        isDirty = false
        guard !writeArmed, outputMayGo else { return true }
        // TLS: encrypt first (into `tlsWire`; OpenSSL calls nothing of ours but WireBIO).
        // A failure is kept for `flush`, which reports it.
        if let s = ssl, let why = encryptOutput(s) {
            encryptFailure = why
            return false
        }
        var chain = iovec()
        let chains = evbuffer_peek(wire, -1, nil, &chain, 1)
        if chains == 0 { return true }
        if chains > 1 { return false }
        ring.add(self, fd: fd, buffer: chain)
        return true
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
    private func writeOut() {
        if let s = ssl, !encrypt(s) { return }
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
    private func plainWrite() -> Int {
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

    static let writeIOVecs = 16
    /// Up to this many bytes, `moveInput` copies instead of relinking.
    static let copyMoveLimit = 4096

    /// Encrypts all queued plaintext into `tlsWire`, as TLS records of up to 16 KiB;
    /// on failure the stream fails, and false is returned.
    private func encrypt(_ s: OpaquePointer) -> Bool {
        let why = encryptFailure ?? encryptOutput(s)
        encryptFailure = nil
        guard let why else { return true }
        armWrite(false)
        fail(.error(why))
        return false
    }

    /// `encrypt` without the consequences (no callback runs): nil, or OpenSSL's reason.
    private func encryptOutput(_ s: OpaquePointer) -> String? {
        while true {
            let len = evbuffer_get_length(output)
            if len == 0 { return nil }
            let chunk = Swift.min(len, 16384)
            guard let p = evbuffer_pullup(output, chunk) else { return nil }
            let r = SSL_write(s, p, Int32(chunk))
            if r <= 0 { return Self.opensslError(fallback: "TLS write failed") }
            evbuffer_drain(output, Int(r))
        }
    }

    // MARK: closing

    /// Closes the socket at once; unsent output is dropped.
    public func close() {
        guard state != .closed else { return }
        state = .closed
        lingerTimer?.cancel()
        lingerTimer = nil
        readArmed = false
        writeArmed = false
        if let e = readEvent { event_del(e) }
        if let e = writeEvent { event_del(e) }
        if let s = ssl {
            if SSL_is_init_finished(s) == 1 {
                _ = SSL_shutdown(s)   // close_notify into tlsWire: one try to send it
                if fd >= 0, let w = tlsWire, evbuffer_get_length(w) > 0 { _ = plainWrite() }
            }
            ERR_clear_error()
        }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        notifyFlushed()
        if let r = selfRetain {
            selfRetain = nil
            r.release()
        }
    }

    /// Sends what is queued, then half-closes and discards whatever the peer still sends
    /// for up to `linger`, so an error response is not destroyed by a TCP reset.
    /// `onFlushed` runs once when the output has gone out (or the stream closed first).
    public func closeAfterFlush(linger: Duration = .seconds(2), onFlushed: (() -> Void)? = nil) {
        guard state == .open || state == .eof, fd >= 0 else {
            onFlushed?()
            close()
            return
        }
        self.onFlushed = onFlushed
        let peerClosed = state == .eof
        state = .flushing
        selfRetain = Unmanaged.passRetained(self)
        delegate = nil
        let t = Timer(loop: loop) { [unowned self] in self.close() }
        t.schedule(after: linger)
        lingerTimer = t
        writeTimeout = linger
        updateReadEvent()
        if outputLength == 0 {
            if peerClosed { close() } else { startLingering() }
        } else if !writeArmed {
            writeOut()
        }
    }

    private func startLingering() {
        notifyFlushed()
        guard fd >= 0 else { return }
        state = .lingering
        shutdown(fd, Int32(SHUT_WR))
        evbuffer_drain(input, evbuffer_get_length(input))
        updateReadEvent()
    }

    private func notifyFlushed() {
        if let f = onFlushed {
            onFlushed = nil
            f()
        }
    }

    private func fail(_ ev: StreamEvent) {
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

    // MARK: callbacks

    /// One read. Small reads (requests, heads, small bodies: the common case) go into the
    /// loop's scratch buffer: staged there for the owner when the input is empty (see
    /// `staged`), else appended by copy into a right-sized chain. After a read fills the
    /// scratch, reads go straight into reserved input space (no copy) until one comes back
    /// small again.
    private func readOnce() -> Int {
        if let s = ssl { return tlsReadOnce(s) }
        if !bulkReads {
            let scratch = loop.readScratch
            let got = recv(fd, scratch.baseAddress, scratch.count, 0)
            if got > 0 {
                bulkReads = got == scratch.count
                if !bulkReads && state == .open && evbuffer_get_length(input) == 0 {
                    // Left in place for the owner (see `staged`); nothing follows this read.
                    staged = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(scratch)[..<got])
                } else {
                    _ = evbuffer_add(input, scratch.baseAddress, got)
                }
            }
            return got
        }
        var iov = (iovec(), iovec())
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
    private func tlsReadOnce(_ s: OpaquePointer) -> Int {
        var iov = iovec()
        guard evbuffer_reserve_space(input, Self.readChunk, &iov, 1) >= 1 else { return -1 }
        let r = SSL_read(s, iov.iov_base, Int32(Swift.min(iov.iov_len, Self.readChunk)))
        // Reading can make OpenSSL write (a KeyUpdate answer, an alert): send it.
        if let w = tlsWire, evbuffer_get_length(w) > 0 { markDirty() }
        if r > 0 {
            iov.iov_len = Int(r)
            evbuffer_commit_space(input, &iov, 1)
            return Int(r)
        }
        evbuffer_commit_space(input, nil, 0)
        switch SSL_get_error(s, r) {
        case SSL_ERROR_WANT_READ:
            errno = EAGAIN
            return -1
        case SSL_ERROR_WANT_WRITE:
            armWrite(true)
            errno = EAGAIN
            return -1
        case SSL_ERROR_ZERO_RETURN:
            return 0
        default:
            // Includes a TCP close without close_notify: a truncation, never a clean end.
            tlsError = Self.opensslError(fallback: "TLS connection closed without close_notify")
            return -2
        }
    }

    /// Keeps what the owner left of a staged read: the scratch buffer is the next read's.
    private func unstage() {
        guard staged.count > 0 else { return }
        if state == .open || state == .eof {
            _ = evbuffer_add(input, staged.baseAddress, staged.count)
        }
        staged = UnsafeRawBufferPointer(start: nil, count: 0)
        if readArmed && evbuffer_get_length(input) >= readHighWatermark { updateReadEvent() }
    }

    /// Whether another read may find data now: a full plain read, or TLS bytes OpenSSL
    /// already holds (otherwise the socket's own readiness brings us back, and an extra
    /// read would only return EAGAIN).
    private func moreToRead(_ n: Int) -> Bool {
        if let s = ssl { return n > 0 && SSL_has_pending(s) == 1 }
        return n >= (bulkReads ? Self.bulkReserve : Self.readChunk)
    }

    /// Reads what the socket holds now, as if it had signalled readable (the delegate gets
    /// the bytes, or the EOF): for an owner that must not decide a connection is idle while
    /// a request sits in the kernel's buffer. Does nothing while reading is paused.
    public func readNow() {
        guard state == .open, fd >= 0, wantRead, evbuffer_get_length(input) < readHighWatermark else { return }
        onReadable(Int16(airlock_ev_read()))
    }

    fileprivate func onReadable(_ what: Int16) {
        if state == .handshaking {
            handshakeEvent(what)
            return
        }
        if what & airlock_ev_timeout() != 0 {
            if state == .lingering { close() } else { delegate?.stream(self, event: .readTimeout) }
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
        } while moreToRead(n) && reads < 8 && evbuffer_get_length(input) < readHighWatermark
        let readErrno = errno
        if state == .lingering {
            evbuffer_drain(input, evbuffer_get_length(input))
            if n == 0 || (n < 0 && readErrno != EAGAIN && readErrno != EINTR) { close() }
            return
        }
        if total > 0 {
            if evbuffer_get_length(input) >= readHighWatermark { updateReadEvent() }
            // Decrypted bytes left inside OpenSSL fire no socket event: come back for them.
            if let s = ssl, SSL_has_pending(s) == 1 || n == -2 || n == 0 { event_active(readEvent, Int32(airlock_ev_read()), 0) }
            delegate?.streamReadable(self)
            unstage()
            // A close that arrived with the data is seen on the next read.
            return
        }
        if n == -2 {
            fail(.error(tlsError))
        } else if n == 0 {
            // Peer closed its side: stop reading; output may still be written.
            state = .eof
            updateReadEvent()
            delegate?.stream(self, event: .eof)
        } else if readErrno != EAGAIN && readErrno != EINTR {
            fail(.error(String(cString: strerror(readErrno))))
        }
    }

    fileprivate func onWritable(_ what: Int16) {
        if state == .connecting {
            var err: Int32 = pendingConnectError
            if what & airlock_ev_timeout() != 0 {
                armWrite(false)
                state = .eof
                delegate?.stream(self, event: .writeTimeout)
                return
            }
            if err == 0 {
                var len = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            }
            armWrite(false)
            if err != 0 {
                state = .eof
                delegate?.stream(self, event: .error(String(cString: strerror(err))))
                return
            }
            if tlsSetup != nil {
                startHandshake()
                return
            }
            state = .open
            updateReadEvent()
            delegate?.stream(self, event: .connected)
            return
        }
        if state == .handshaking {
            handshakeEvent(what)
            return
        }
        if what & airlock_ev_timeout() != 0 {
            if state == .flushing { close() } else { fail(.writeTimeout) }
            return
        }
        writeOut()
    }
}

private let streamReadCallback: @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void = { _, what, ctx in
    let s = Unmanaged<Stream>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(s) { s.onReadable(what) }
}

private let streamWriteCallback: @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void = { _, what, ctx in
    let s = Unmanaged<Stream>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(s) { s.onWritable(what) }
}
