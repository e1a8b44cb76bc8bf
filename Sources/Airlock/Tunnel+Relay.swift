import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// The open tunnel: the 200, the raw relay both ways (libevent's le-proxy: a side stops reading
/// while its partner's output is over `ClientConnection.writeHighWatermark` and resumes once it
/// drained to half of it), EOF passed on as `shutdown(SHUT_WR)` once the partner's output
/// drained, and the idle timer.
extension Tunnel {
    static let established: [UInt8] = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    func stream(_ side: TunnelMachine.Side) -> Stream {
        side == .client ? clientStream : upstream!
    }

    private func side(of s: Stream) -> TunnelMachine.Side {
        s === clientStream ? .client : .upstream
    }

    /// The upstream is connected: 200 to the client, the bytes it sent behind its CONNECT head
    /// go up, both sides are read from now on.
    func establish() {
        guard let u = upstream else { return }
        u.setTimeouts(read: nil, write: nil)   // the connect timeout is over; the idle timer governs
        u.setReadHighWatermark(ClientConnection.readHighWatermark)
        let low = ClientConnection.writeHighWatermark / 2
        u.setWriteLowWatermark(low)
        clientStream.setWriteLowWatermark(low)
        clientStream.write(Self.established)
        lastActivity = EventLoop.nowNanos()
        relay(from: .client)
        if !machine.isPaused(.client) { clientStream.setReading(true) }
        u.setReading(true)
        spliceIfPossible(from: .client)
        spliceIfPossible(from: .upstream)
        let timer = Timer(loop: worker.loop) { [unowned self] in self.idleTimerFired() }
        idleTimer = timer
        timer.schedule(after: worker.limits.tunnelIdleTimeout)
    }

    /// Moves everything `side` has buffered to its partner's output, unparsed: `BodyPump`'s
    /// relay over a body that ends only with the connection (the same path as an exchange's
    /// bodies; backpressure and EOF are the machine's).
    func relay(from side: TunnelMachine.Side) {
        guard let u = upstream else { return }
        let src = side == .client ? clientStream : u
        let dst = side == .client ? u : clientStream
        guard src.inputLength > 0 else { return }
        defer { spliceIfPossible(from: side) }
        var moved = 0
        // A close-delimited body never fails to decode.
        try? BodyPump.relay(from: src, to: dst, decoder: &raw, out: .close, bounded: false,
                            highWatermark: ClientConnection.writeHighWatermark) { moved += $0 }
        if side == .client { bytesUp &+= UInt64(moved) } else { bytesDown &+= UInt64(moved) }
        lastActivity = EventLoop.nowNanos()
        if dst.outputLength >= ClientConnection.writeHighWatermark {
            perform(machine.outputFilled(toward: side.partner))
        }
    }

    /// Once what `side` had buffered went the copying way, its bytes move socket to socket
    /// (`limits.splice`; `SplicePolicy` with the tunnel's close-delimited framing): backpressure
    /// is the pipe's (the side reads only while its pipe is empty) and the machine's, EOF comes
    /// as from a read, and the counts and idle timer move with every splice.
    func spliceIfPossible(from side: TunnelMachine.Side) {
        guard let u = upstream, !machine.isClosed else { return }
        let src = side == .client ? clientStream : u
        let dst = side == .client ? u : clientStream
        guard !src.isSplicing else { return }
        let facts = SplicePolicy.Facts(enabled: worker.limits.splice, plainBothSides: src.isPlainTCP && dst.isPlainTCP,
                                       inputBuffered: src.inputLength, inFraming: .closeDelimited, out: .close)
        guard case .splice(let budget) = SplicePolicy.decide(facts, decoder: raw) else { return }
        _ = src.startSplice(to: dst, budget: budget) { [weak self] n in self?.spliced(n, from: side) }
    }

    private func spliced(_ n: Int, from side: TunnelMachine.Side) {
        guard let u = upstream else { return }
        if side == .client { bytesUp &+= UInt64(n) } else { bytesDown &+= UInt64(n) }
        lastActivity = EventLoop.nowNanos()
        worker.context.metrics.countSpliced(n)
        let dst = side == .client ? u : clientStream
        if dst.outputLength >= ClientConnection.writeHighWatermark {
            perform(machine.outputFilled(toward: side.partner))
        }
    }

    private func idleTimerFired() {
        guard !machine.isClosed else { return }
        let limit = worker.limits.tunnelIdleTimeout
        let idle = Duration.nanoseconds(Int64(EventLoop.nowNanos() &- lastActivity))
        if idle >= limit {
            perform(machine.idleTimedOut())
        } else {
            idleTimer?.schedule(after: limit - idle)
        }
    }

    // MARK: StreamDelegate

    func streamReadable(_ s: Stream) {
        guard upstream != nil, !machine.isClosed else { return }
        relay(from: side(of: s))
    }

    func streamWritable(_ s: Stream) {
        guard upstream != nil, !machine.isClosed else { return }
        perform(machine.outputDrained(toward: side(of: s), empty: s.outputLength == 0))
    }

    func stream(_ s: Stream, event: StreamEvent) {
        let side = side(of: s)
        if machine.state == .connecting {
            if side == .upstream { upstreamConnectEvent(event) } else { perform(machine.failed(.client)) }
            return
        }
        switch event {
        case .eof:
            relay(from: side)   // delivered before the close already; nothing is left behind
            guard let u = upstream else { return }
            let partner = side == .client ? u : clientStream
            perform(machine.eof(from: side, partnerOutputEmpty: partner.outputLength == 0))
        case .error, .readTimeout, .writeTimeout, .tlsFailed, .connected:
            if failure == nil { failure = "\(side == .client ? "client" : "upstream"): \(event.reason)" }
            perform(machine.failed(side))
        }
    }
}
