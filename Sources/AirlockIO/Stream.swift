import CLibevent
import Glibc

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
///
/// The class holds the state and the events; its concerns live in extensions:
/// `Stream+Read` (input and the read strategy), `Stream+Write` (output, flush and the
/// loop's batched writes), `Stream+TLS` (the handshake, through a `TLSSession`) and
/// `Stream+Close` (close, flush-then-linger, failure). `TCPSocket` makes the outgoing socket.
public final class Stream {
    // Stored properties widest first, so that none is padded; what only some streams use is
    // made when first needed (the write event, the input buffer), held only while in use
    // (the output buffer) or boxed (`tlsSetup`): every idle client connection holds a stream.
    public unowned(unsafe) var delegate: (any StreamDelegate)?
    let loop: EventLoop
    /// Received bytes the owner has not consumed. Until the first bytes must be kept, the
    /// loop's shared, always empty `emptyBuffer` (most reads are consumed where they landed,
    /// see `staged`, so many connections never need a buffer of their own): write to it only
    /// through `writableInput`.
    @usableFromInline var input: OpaquePointer
    /// Input not yet copied into `input`: during a read callback, the bytes one small read
    /// left in the loop's scratch buffer, when `input` was empty. The owner usually consumes
    /// them all in the callback (a whole request or response head and a small body), so
    /// they never get a buffer of their own; what is left is appended to `input` when the
    /// callback returns. Empty at every other time, and always while `input` is not empty.
    @usableFromInline var staged = UnsafeRawBufferPointer(start: nil, count: 0)
    /// Bytes queued for the peer. While none are, the loop's shared, always empty
    /// `emptyBuffer`: a buffer is taken from the loop for the first byte queued
    /// (`writableOutput`, the only way to write to it) and given back once everything has gone
    /// (`releaseOutputIfEmpty`), so idle streams hold none.
    var output: OpaquePointer
    /// What goes to the socket: `output`, or once a TLS handshake is done the session's
    /// ciphertext buffer (`TLSSession.wire`).
    var wire: OpaquePointer
    var readEvent: OpaquePointer?
    /// Made the first time the write event is armed (`armWrite`): most streams' output
    /// leaves straight from `flush`, and never waits for the socket.
    var writeEvent: OpaquePointer?
    /// Read and write timeouts with their libevent common-timeout timevals (looked up when
    /// set, not per re-arm).
    var timeouts = StreamTimeouts(read: nil, write: nil, readTV: nil, writeTV: nil)
    var readHighWatermark = Int.max
    var writeLowWatermark = 0
    /// Set by `closeAfterFlush`: what only a stream flushing and lingering holds.
    var closing: Closing?
    /// The TLS session, from the start of the handshake; nil on plain streams. The stream
    /// owns one reference (taken in `startHandshake`, released in deinit) and holds it
    /// unmanaged, so the read and write paths use the session without a retain/release pair
    /// each time (`withUnsafeGuaranteedRef`), as cheaply as the bare `SSL*` they used before.
    var tlsSession: Unmanaged<TLSSession>?
    /// Splice mode (`Stream+Splice`): as a source, where its reads go; as a destination, the
    /// pipe it writes before its output. Nil on streams that copy (one reference, boxed: every
    /// idle client connection holds a stream).
    var splice: SpliceState?
    private var tlsSetupBox: TLSSetupBox?
    /// When the TCP connection came up and the TLS handshake began (0 on plain streams): the
    /// split between connect and TLS time in task metrics and the gateway's histograms.
    public internal(set) var handshakeStartedAt: UInt64 = 0
    var fd: Int32
    var pendingConnectError: Int32 = 0
    var state: State
    var wantRead = true            // the owner wants input
    var readArmed = false          // the read event is added
    var writeArmed = false         // the write event is added
    var isDirty = false
    /// Streams we connected (to upstreams) are flushed before accepted ones (to clients):
    /// see `EventLoop.flushDirty`.
    let flushesFirst: Bool
    /// Reads go straight into reserved input space (a bulk transfer is under way).
    var bulkReads = false
    /// The owner will likely splice what follows the next head (`Stream+Splice`): one read per
    /// readable event, so that little is copied before the owner can start splicing.
    public var spliceExpected = false

    /// For a TLS upstream: how to start TLS, until the handshake starts.
    var tlsSetup: TLSSetup? {
        get { tlsSetupBox?.setup }
        set { tlsSetupBox = newValue.map(TLSSetupBox.init) }
    }

    /// The TLS session as an ordinary reference, for the paths that are not hot.
    var tls: TLSSession? { tlsSession?.takeUnretainedValue() }

    final class Closing {
        /// Bounds the flush, then the linger (`closeAfterFlush`).
        var lingerTimer: Timer?
        let linger: Duration
        /// While flushing and lingering the stream keeps itself alive; its owner is gone.
        var selfRetain: Unmanaged<Stream>?
        var onFlushed: (() -> Void)?

        init(onFlushed: (() -> Void)?, linger: Duration) {
            self.onFlushed = onFlushed
            self.linger = linger
        }
    }

    private final class TLSSetupBox {
        let setup: TLSSetup
        init(_ setup: TLSSetup) { self.setup = setup }
    }

    enum State {
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
    static let writeIOVecs = 16
    /// Up to this many bytes, `moveInput` copies instead of relinking.
    static let copyMoveLimit = 4096

    /// Wraps an accepted, connected, non-blocking socket.
    public init(loop: EventLoop, fd: Int32) {
        self.loop = loop
        self.fd = fd
        flushesFirst = false
        input = loop.emptyBuffer
        output = loop.emptyBuffer
        wire = output
        state = .open
        makeEvents()
        updateReadEvent()
    }

    /// Starts a non-blocking connect; `.connected` or an error event follows (never
    /// before this initializer returns). `timeout` bounds the connect.
    public init(loop: EventLoop, connectingTo address: SocketAddress, timeout: Duration, tls: TLSSetup? = nil) throws {
        let socket = try TCPSocket.connect(to: address)
        self.loop = loop
        tlsSetupBox = tls.map(TLSSetupBox.init)
        flushesFirst = true
        fd = socket.fd
        pendingConnectError = socket.error
        input = loop.emptyBuffer
        output = loop.emptyBuffer
        wire = output
        state = .connecting
        makeEvents()
        // Completion (or an immediate failure) is reported from the loop, never re-entrantly.
        timeouts = StreamTimeouts(read: nil, write: timeout, readTV: nil, writeTV: loop.commonTimeout(timeout))
        armWrite(true)
        if pendingConnectError != 0 || socket.immediate { event_active(writeEvent, Int32(airlock_ev_write()), 0) }
    }

    deinit {
        tlsSession?.release()   // SSL_free before the socket closes
        if let p = spliceIn { loop.pipes.dropped(p) }
        if let e = readEvent { event_free(e) }
        if let e = writeEvent { event_free(e) }
        if fd >= 0 { Glibc.close(fd) }
        if input != loop.emptyBuffer { evbuffer_free(input) }
        if output != loop.emptyBuffer { evbuffer_free(output) }
    }

    private func makeEvents() {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, fd, airlock_ev_read() | airlock_ev_persist(), streamReadCallback, ctx)
    }

    private func makeWriteEvent() -> OpaquePointer? {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        writeEvent = event_new(loop.base, fd, airlock_ev_write() | airlock_ev_persist(), streamWriteCallback, ctx)
        return writeEvent
    }

    /// `input`, given a buffer of its own first if it is still the loop's shared empty one.
    @inline(__always)
    func writableInput() -> OpaquePointer {
        if input == loop.emptyBuffer { input = evbuffer_new() }
        return input
    }

    /// `output`, taken from the loop first if the stream holds none (a plain stream's `wire`
    /// is its output: it follows).
    @inline(__always)
    func writableOutput() -> OpaquePointer {
        if output == loop.emptyBuffer { takeOutput() }
        return output
    }

    private func takeOutput() {
        output = loop.takeOutputBuffer()
        if wire == loop.emptyBuffer { wire = output }
    }

    /// Gives the output buffer back to the loop once everything queued in it has gone.
    @inline(__always)
    func releaseOutputIfEmpty() {
        if output != loop.emptyBuffer && evbuffer_get_length(output) == 0 { giveBackOutput() }
    }

    private func giveBackOutput() {
        if wire == output { wire = loop.emptyBuffer }
        loop.giveBackOutputBuffer(output)
        output = loop.emptyBuffer
    }

    // MARK: settings

    public func setReading(_ on: Bool) {
        wantRead = on
        updateReadEvent()
    }

    /// Reading pauses while the input holds `bytes` or more.
    public func setReadHighWatermark(_ bytes: Int) {
        readHighWatermark = bytes
        updateReadEvent()
    }

    /// The write callback fires when the output drains to `bytes` or below.
    public func setWriteLowWatermark(_ bytes: Int) { writeLowWatermark = bytes }

    public func setTimeouts(read: Duration?, write: Duration?) {
        if read == timeouts.read && write == timeouts.write { return }
        timeouts = StreamTimeouts(read: read, write: write,
                                  readTV: read == timeouts.read ? timeouts.readTV : read.map(loop.commonTimeout),
                                  writeTV: write == timeouts.write ? timeouts.writeTV : write.map(loop.commonTimeout))
        rearmTimeouts()
    }

    /// The same with libevent's timevals already looked up (`EventLoop.timeouts`): for a
    /// connection that switches between two sets on every exchange (a pooled upstream).
    public func setTimeouts(_ t: StreamTimeouts) {
        if t.read == timeouts.read && t.write == timeouts.write { return }
        timeouts = t
        rearmTimeouts()
    }

    private func rearmTimeouts() {
        if readArmed { add(readEvent, state == .lingering ? nil : timeouts.readTV) }
        if writeArmed { add(writeEvent, timeouts.writeTV) }
    }

    // MARK: event arming

    @inline(__always)
    func add(_ ev: OpaquePointer?, _ timeout: timeval?) {
        if var tv = timeout {
            event_add(ev, &tv)
        } else {
            event_add(ev, nil)
        }
    }

    /// The read event is armed while the owner wants input, the input is under its high
    /// watermark, and the peer has not closed (or while lingering). A TLS handshake in
    /// progress keeps its own arming: the owner's settings apply once it is done.
    func updateReadEvent() {
        let should: Bool
        switch state {
        case .open: should = wantRead && (spliceOut == nil ? evbuffer_get_length(input) < readHighWatermark : spliceReady)
        case .lingering: should = true
        case .handshaking: return   // the handshake arms its own events (Stream+TLS)
        case .connecting, .eof, .flushing, .closed: should = false
        }
        if should && !readArmed {
            readArmed = true
            add(readEvent, state == .lingering ? nil : timeouts.readTV)
            // TLS bytes read from the socket before reading paused fire no socket event now.
            if state == .open, let t = tlsSession, t._withUnsafeGuaranteedRef({ $0.hasPending }) {
                event_active(readEvent, Int32(airlock_ev_read()), 0)
            }
        } else if !should && readArmed {
            readArmed = false
            event_del(readEvent)
        }
    }

    func armWrite(_ on: Bool) {
        if on && !writeArmed {
            writeArmed = true
            add(writeEvent ?? makeWriteEvent(), timeouts.writeTV)
        } else if !on && writeArmed {
            writeArmed = false
            event_del(writeEvent)
        }
    }

    /// Disarms both events (a handshake or connect that ended).
    func disarm() {
        armWrite(false)
        if readArmed { event_del(readEvent); readArmed = false }
    }

    // MARK: callbacks

    fileprivate func onWritable(_ what: Int16) {
        switch state {
        case .connecting: connectEvent(what)
        case .handshaking: handshakeEvent(what)
        default:
            if what & airlock_ev_timeout() != 0 {
                if state == .flushing { close() } else { fail(.writeTimeout) }
                return
            }
            writeOut()
        }
    }

    /// The connect finished, failed or timed out: report it, or start TLS.
    private func connectEvent(_ what: Int16) {
        armWrite(false)
        if what & airlock_ev_timeout() != 0 {
            state = .eof
            delegate?.stream(self, event: .writeTimeout)
            return
        }
        let err = pendingConnectError != 0 ? pendingConnectError : TCPSocket.connectError(fd)
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
