import CLibevent
import Glibc

public enum StreamEvent: Sendable, Equatable {
    case connected
    case eof
    case error(String)
    case readTimeout
    case writeTimeout
}

/// Receives a stream's callbacks on the stream's loop.
public protocol StreamDelegate: AnyObject {
    func streamReadable(_ stream: Stream)
    /// The output buffer drained to the write low watermark.
    func streamWritable(_ stream: Stream)
    func stream(_ stream: Stream, event: StreamEvent)
}

/// A buffered TCP stream: one libevent bufferevent, its input and output evbuffers.
/// Payload moves between streams with `moveInput(_:to:)`, which relinks evbuffer chains
/// instead of copying bytes.
public final class Stream {
    private var bev: OpaquePointer?
    public unowned(unsafe) var delegate: (any StreamDelegate)?
    private var closing: Closing = .open
    private var lingerTimer: Timer?
    /// While flushing and lingering the stream keeps itself alive; its owner is gone.
    private var selfRetain: Unmanaged<Stream>?
    private var onFlushed: (() -> Void)?
    fileprivate let loop: EventLoop
    /// Plain TCP writes go straight to the socket when a callback returns (`flush`); the
    /// bufferevent's write event is enabled only while a write could not complete.
    private var connected: Bool
    private var isDirty = false
    private var writeEventOn = false

    private enum Closing {
        case open            // → .flushing or .closed
        case flushing        // output draining, then shutdown(SHUT_WR) → .lingering
        case lingering       // reading and discarding until EOF or timeout → .closed
        case closed          // final
    }

    /// Wraps an accepted, connected socket.
    public init(loop: EventLoop, fd: Int32) {
        self.loop = loop
        connected = true
        bev = bufferevent_socket_new(loop.base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
        installCallbacks()
    }

    /// Starts a non-blocking connect; `.connected` or an error event follows.
    public init(loop: EventLoop, connectingTo address: SocketAddress, timeout: Duration) throws {
        self.loop = loop
        connected = false
        bev = bufferevent_socket_new(loop.base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
        installCallbacks()
        var tv = timeout.timeval
        bufferevent_set_timeouts(bev, &tv, &tv)
        let rc = address.withSockaddr { sa, len in bufferevent_socket_connect(bev, sa, Int32(len)) }
        if rc != 0 {
            let e = IOError.errno(.connect, "connect \(address)")
            bufferevent_free(bev)
            bev = nil
            closing = .closed
            throw e
        }
        var one: Int32 = 1
        let fd = bufferevent_getfd(bev)
        if fd >= 0 { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    }

    deinit {
        if let b = bev { bufferevent_free(b) }
    }

    private func installCallbacks() {
        bufferevent_setcb(bev, streamReadCallback, streamWriteCallback, streamEventCallback,
                          Unmanaged.passUnretained(self).toOpaque())
        // bufferevents start with writing enabled; ours write through (see flush()).
        bufferevent_disable(bev, airlock_ev_write())
        bufferevent_enable(bev, airlock_ev_read())
    }

    private func setWriteEvent(_ on: Bool) {
        guard let b = bev, on != writeEventOn else { return }
        writeEventOn = on
        if on { bufferevent_enable(b, airlock_ev_write()) } else { bufferevent_disable(b, airlock_ev_write()) }
    }

    private func markDirty() {
        if !isDirty && !writeEventOn {
            isDirty = true
            loop.markDirty(self)
        }
    }

    /// Writes queued output to the socket now. What the kernel does not take waits for
    /// the write event.
    func flush() {
        isDirty = false
        guard let b = bev, closing == .open, connected, !writeEventOn else { return }
        let out = bufferevent_get_output(b)
        if evbuffer_get_length(out) == 0 { return }
        let fd = bufferevent_getfd(b)
        // A bufferevent keeps its output's start frozen; it thaws it around its own writes too.
        evbuffer_unfreeze(out, 1)
        let n = evbuffer_write(out, fd)
        evbuffer_freeze(out, 1)
        if n < 0 && errno != EAGAIN && errno != EINTR {
            // Let the bufferevent meet the error on its own write and report it.
            setWriteEvent(true)
            return
        }
        if evbuffer_get_length(out) > 0 {
            setWriteEvent(true)
        } else {
            // Drained at once: tell the delegate as the write callback would.
            delegate?.streamWritable(self)
        }
    }

    public var isOpen: Bool { closing == .open }

    // MARK: input

    public var inputLength: Int {
        guard let b = bev else { return 0 }
        return evbuffer_get_length(bufferevent_get_input(b))
    }

    /// Calls `body` with the first `min(max, inputLength)` input bytes made contiguous.
    public func withInput<R, E: Error>(max: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        guard let b = bev else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let input = bufferevent_get_input(b)
        let n = Swift.min(max, evbuffer_get_length(input))
        if n == 0 { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let p = evbuffer_pullup(input, n)
        return try body(UnsafeRawBufferPointer(start: p, count: n))
    }

    public func drainInput(_ n: Int) {
        guard let b = bev, n > 0 else { return }
        evbuffer_drain(bufferevent_get_input(b), n)
    }

    /// Moves `n` input bytes to `other`'s output without copying where possible.
    public func moveInput(_ n: Int, to other: Stream) {
        guard let b = bev, let o = other.bev, n > 0 else { return }
        evbuffer_remove_buffer(bufferevent_get_input(b), bufferevent_get_output(o), n)
        other.markDirty()
    }

    public func setReading(_ on: Bool) {
        guard let b = bev, closing == .open else { return }
        if on { bufferevent_enable(b, airlock_ev_read()) } else { bufferevent_disable(b, airlock_ev_read()) }
    }

    /// libevent stops reading from the socket while the input holds `bytes` or more.
    public func setReadHighWatermark(_ bytes: Int) {
        bufferevent_setwatermark(bev, airlock_ev_read(), 0, bytes)
    }

    // MARK: output

    public var outputLength: Int {
        guard let b = bev else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(b))
    }

    public func write(_ bytes: [UInt8]) {
        guard let b = bev, !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { _ = evbuffer_add(bufferevent_get_output(b), $0.baseAddress, $0.count) }
        markDirty()
    }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let b = bev, bytes.count > 0 else { return }
        _ = evbuffer_add(bufferevent_get_output(b), bytes.baseAddress, bytes.count)
        markDirty()
    }

    /// The write callback fires when the output drains to `bytes` or below.
    public func setWriteLowWatermark(_ bytes: Int) {
        bufferevent_setwatermark(bev, airlock_ev_write(), bytes, 0)
    }

    public func setTimeouts(read: Duration?, write: Duration?) {
        guard let b = bev else { return }
        var r = read?.timeval ?? timeval()
        var w = write?.timeval ?? timeval()
        withUnsafePointer(to: &r) { rp in
            withUnsafePointer(to: &w) { wp in
                _ = bufferevent_set_timeouts(b, read == nil ? nil : rp, write == nil ? nil : wp)
            }
        }
    }

    // MARK: closing

    /// Frees the socket at once; unsent output is dropped.
    public func close() {
        closing = .closed
        lingerTimer?.cancel()
        lingerTimer = nil
        if let b = bev {
            bufferevent_free(b)
            bev = nil
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
        guard closing == .open, let b = bev else { onFlushed?(); return }
        self.onFlushed = onFlushed
        closing = .flushing
        selfRetain = Unmanaged.passRetained(self)
        delegate = nil
        bufferevent_setwatermark(b, airlock_ev_write(), 0, 0)
        bufferevent_disable(b, airlock_ev_read())
        if connected && outputLength > 0 { setWriteEvent(true) }
        let t = Timer(loop: loop) { [unowned self] in self.close() }
        t.schedule(after: linger)
        lingerTimer = t
        var tv = linger.timeval
        bufferevent_set_timeouts(b, &tv, &tv)
        if outputLength == 0 { startLingering() }
    }

    private func startLingering() {
        notifyFlushed()
        guard let b = bev else { return }
        closing = .lingering
        let fd = bufferevent_getfd(b)
        if fd >= 0 { shutdown(fd, Int32(SHUT_WR)) }
        evbuffer_drain(bufferevent_get_input(b), evbuffer_get_length(bufferevent_get_input(b)))
        bufferevent_enable(b, airlock_ev_read())
    }

    private func notifyFlushed() {
        if let f = onFlushed {
            onFlushed = nil
            f()
        }
    }

    fileprivate func onRead() {
        switch closing {
        case .open: delegate?.streamReadable(self)
        case .lingering, .flushing:
            if let b = bev { evbuffer_drain(bufferevent_get_input(b), evbuffer_get_length(bufferevent_get_input(b))) }
        case .closed: break
        }
    }

    fileprivate func onWrite() {
        switch closing {
        case .open:
            if outputLength == 0 { setWriteEvent(false) }
            delegate?.streamWritable(self)
        case .flushing: if outputLength == 0 { startLingering() }
        case .lingering, .closed: break
        }
    }

    fileprivate func onEvent(_ what: Int16) {
        if closing != .open {
            close()
            return
        }
        let ev: StreamEvent
        if what & airlock_bev_event_connected() != 0 {
            connected = true
            ev = .connected
        } else if what & airlock_bev_event_timeout() != 0 {
            ev = what & airlock_bev_event_reading() != 0 ? .readTimeout : .writeTimeout
        } else if what & airlock_bev_event_eof() != 0 {
            ev = .eof
        } else {
            let err = Glibc.errno
            ev = .error(String(cString: strerror(err)))
        }
        delegate?.stream(self, event: ev)
    }
}

private let streamReadCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, ctx in
    let s = Unmanaged<Stream>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(s) {
        s.onRead()
    }
}

private let streamWriteCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, ctx in
    let s = Unmanaged<Stream>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(s) {
        s.onWrite()
    }
}

private let streamEventCallback: @convention(c) (OpaquePointer?, Int16, UnsafeMutableRawPointer?) -> Void = { _, what, ctx in
    let s = Unmanaged<Stream>.fromOpaque(ctx!).takeUnretainedValue()
    withExtendedLifetime(s) {
        s.onEvent(what)
    }
}
