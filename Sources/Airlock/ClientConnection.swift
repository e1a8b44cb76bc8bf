import AirlockIO
import AirlockSession
import AirlockWire
import Logging

/// One client connection: reads a request head, routes it, relays the exchange with its
/// upstream, and goes back for the next head (keep-alive, pipelining). Lives on one worker.
final class ClientConnection: StreamDelegate {
    unowned(unsafe) let worker: Worker   // the worker outlives its connections
    let stream: Stream
    let peer: SocketAddress
    var state: State = .awaitingHead
    var scanner: HeadScanner
    var timer: Timer!
    var timerMode: TimerMode = .idle
    var exchange: Exchange?
    var drainRequested = false
    /// The client shut down its sending side after a complete request: it still gets the
    /// response (half-close, as HAProxy without abortonclose), then the connection closes.
    var peerHalfClosed = false
    /// True while `readHead` runs (it is not re-entered: see there).
    var readingHeads = false
    /// Reading heads is paused until the client reads the responses queued for it.
    var pausedForOutput = false
    /// The upstream connection that served this client's last exchange. A preference for the
    /// next one, never ownership: the connection is back in the worker's pool, where any client
    /// may take it (nginx's and HAProxy's pools do the same), so idle clients hold no upstreams.
    weak var lastUpstream: UpstreamConnection?

    enum State {
        case awaitingHead   // → .forwarding or .closed
        case forwarding     // an exchange is in flight → .awaitingHead or .closed
        case closed         // final
    }

    enum TimerMode {
        case idle         // no timer: keep-alive idleness is the stream's read timeout
        case header       // a head has begun: it must be complete by header_timeout → 408
        case drainGrace   // draining and idle only briefly: close unless a request arrives
    }

    /// When the connection last became idle (accepted, or its last response queued).
    var idleSince: UInt64 = EventLoop.nowNanos()
    /// While draining, a connection idle for less than this may still receive the request
    /// its client sent in answer to the last response (keep-alive clients send at once):
    /// it is answered, with `Connection: close`, instead of being lost to the close.
    static let drainGrace: Duration = .milliseconds(100)

    /// Bytes buffered from a socket before libevent stops reading it.
    static let readHighWatermark = 128 * 1024
    /// Output queued to a peer before the other side stops reading (backpressure).
    static let writeHighWatermark = 256 * 1024

    init(worker: Worker, fd: Int32, peer: SocketAddress) {
        self.worker = worker
        self.peer = peer
        self.stream = Stream(loop: worker.loop, fd: fd)
        self.scanner = HeadScanner(kind: .request, limits: worker.wireLimits)
        stream.delegate = self
        stream.setReadHighWatermark(max(Self.readHighWatermark, worker.limits.headerBytes + 4))
        // Keep-alive idleness is the read timeout (re-armed by libevent on every read);
        // the header timer runs only while a request head is incomplete.
        stream.setTimeouts(read: worker.limits.idleTimeout, write: worker.limits.idleTimeout)
        timer = Timer(loop: worker.loop) { [unowned self] in self.timerFired() }
    }

    var limits: LimitsConfig { worker.limits }
    var logger: Logger { worker.logger }

    // MARK: timers

    /// Back to waiting for a head: the header timer starts with its first byte.
    func armIdleTimer() {
        if timerMode != .idle {
            timerMode = .idle
            timer.cancel()
        }
    }

    private func timerFired() {
        guard state == .awaitingHead else { return }
        if timerMode == .drainGrace {
            timerMode = .idle
            readHead()   // serves a request that came in the grace, or closes
            return
        }
        let e = GatewayError(.headerTimeout, status: 408,
                             message: "the request head did not arrive within \(limits.headerTimeout)",
                             source: .client, mustClose: true)
        respondError(e, exchange: nil, requestID: worker.nextRequestID())
    }

    // MARK: StreamDelegate

    func streamReadable(_ s: Stream) {
        switch state {
        case .awaitingHead: readHead()
        case .forwarding: pumpRequestBody()
        case .closed: break
        }
    }

    func streamWritable(_ s: Stream) {
        if state == .awaitingHead && pausedForOutput {
            pausedForOutput = false
            awaitNextHead()
            return
        }
        guard state == .forwarding, let ex = exchange else { return }
        if let v = ex.validation, v.phase == .delivering {
            continueDelivery(ex, v)
            return
        }
        guard let u = ex.upstream else { return }
        // The client drained what we queued: let the upstream send more.
        if stream.outputLength < Self.writeHighWatermark / 2 {
            u.stream.setReading(true)
            if ex.suspended { setSuspended(ex, false) }
            pumpResponseBody()
        }
    }

    func stream(_ s: Stream, event: StreamEvent) {
        switch state {
        case .awaitingHead:
            if event == .readTimeout && stream.inputLength > 0 { return }   // the header timer decides
            if event == .eof {
                // Heads complete before the close were served already (data is delivered
                // before the close): what is left is nothing or a truncated head.
                peerHalfClosed = true
                readHead()
                return
            }
            close()
        case .forwarding:
            if event == .readTimeout { return }   // the upstream's timeouts govern an exchange
            if event == .eof, let ex = exchange {
                // Half-close: this response and those of requests already pipelined behind it
                // are still delivered, then the connection closes. Body bytes that arrived with
                // the close are still buffered (the upstream may still be connecting): they are
                // relayed first, and only a body still incomplete after that is an abort.
                perform(ex.machine.clientHalfClosed(), ex, event: event)
                return
            }
            clientAborted(event)
        case .closed:
            break
        }
    }

    // MARK: head

    /// Parses and dispatches every complete head buffered, in order. Exchanges that end
    /// inside `dispatch` (an error answered at once) come back here through `awaitNextHead`;
    /// that nested call returns at once and this loop carries on, so a long pipeline of
    /// refused requests costs no stack.
    func readHead() {
        guard !readingHeads else { return }
        readingHeads = true
        defer { readingHeads = false }
        var polled = false
        while state == .awaitingHead {
            if stream.outputLength >= Self.writeHighWatermark {
                // Responses pile up unread: take no further request until the client reads
                // (streamWritable resumes), so memory stays bounded whatever it pipelines.
                pausedForOutput = true
                stream.setReading(false)
                stream.setWriteLowWatermark(Self.writeHighWatermark / 2)
                return
            }
            var available = stream.inputLength
            if available == 0 && drainRequested && !polled {
                // Draining: before this connection is called idle and closed, take a request
                // the client sent before it could learn of the close (already in the socket).
                polled = true
                stream.readNow()
                available = stream.inputLength
            }
            if available == 0 { break }
            let headLength: Int?
            do {
                headLength = try stream.withInput(max: scanner.window) { buf throws(WireError) in
                    try scanner.scan(buf)
                }
            } catch {
                respondError(GatewayError(wire: error), exchange: nil, requestID: worker.nextRequestID())
                return
            }
            guard let n = headLength else {
                if timerMode != .header && !peerHalfClosed {
                    timerMode = .header
                    timer.schedule(after: limits.headerTimeout)
                }
                break
            }
            let parsed: Result<RequestHead, WireError> = stream.withInput(max: n) { buf in
                let spare = worker.takeSpareHeaders()
                do throws(WireError) {
                    return .success(try RequestParser.parse(buf, limits: worker.wireLimits, reusing: consume spare))
                } catch {
                    return .failure(error)
                }
            }
            stream.drainInput(n)
            scanner.reset()
            armIdleTimer()
            switch parsed {
            case .success(let head): dispatch(head)
            case .failure(let e): respondError(GatewayError(wire: e), exchange: nil, requestID: worker.nextRequestID())
            }
        }
        guard state == .awaitingHead else { return }
        if drainRequested && !peerHalfClosed && stream.inputLength == 0 {
            let idleFor = Duration.nanoseconds(Int64(EventLoop.nowNanos() &- idleSince))
            if idleFor >= Self.drainGrace {
                // Idle while draining: close now, before a next request can be sent on it.
                closeAfterFlush()
            } else if timerMode != .drainGrace {
                // Its last response has only just gone: the next request may be on its way.
                timerMode = .drainGrace
                timer.schedule(after: Self.drainGrace - idleFor)
            }
            return
        }
        guard peerHalfClosed else { return }
        // The client sends nothing more: every complete request it sent has been answered.
        if stream.inputLength > 0 {
            respondError(GatewayError(.badRequest, status: 400,
                                      message: "the client closed its side in the middle of a request head",
                                      source: .client, mustClose: true),
                         exchange: nil, requestID: worker.nextRequestID())
        } else {
            closeAfterFlush()
        }
    }

    /// Back to reading heads after an exchange the client's connection survives: serves the
    /// requests already pipelined behind it, or closes once a half-closed client has none left.
    func awaitNextHead() {
        state = .awaitingHead
        idleSince = EventLoop.nowNanos()
        scanner.reset()
        stream.setReading(true)
        stream.setWriteLowWatermark(0)
        armIdleTimer()
        readHead()
    }

    /// Whether the connection can carry another request after this one: the gateway is not
    /// draining, and the client has not half-closed, or has already sent more. (A response
    /// that began before the drain said keep-alive: the connection then closes once no
    /// request is waiting, see `readHead`.)
    var clientContinues: Bool {
        !drainRequested && (!peerHalfClosed || stream.inputLength > 0)
    }

    // MARK: closing

    /// Graceful shutdown of this connection: an exchange in flight finishes and its response
    /// carries `Connection: close`; an idle connection closes at once (once what is queued for
    /// it has gone out), unless a request has already arrived on it, which is answered first.
    func drain() {
        drainRequested = true
        if state == .awaitingHead && !readingHeads { readHead() }
    }

    func abort() {
        if let u = exchange?.upstream { u.close() }
        exchange = nil
        close()
    }

    func close() {
        guard state != .closed else { return }
        state = .closed
        timer.cancel()
        stream.close()
        worker.clientClosed(self)
    }

    /// Flush what is queued (an error or a final response), then close.
    func closeAfterFlush() {
        guard state != .closed else { return }
        state = .closed
        timer.cancel()
        let w = worker
        w.flushStarted()
        stream.closeAfterFlush { w.flushEnded() }
        worker.clientClosed(self)
    }
}
