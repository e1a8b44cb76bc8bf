import CLibevent
import Glibc

/// Zero-copy relay (HAProxy's `option splice-auto`): a source stream in splice mode does not
/// `recv` into its input; on readable it splices up to the byte budget its owner set from its
/// socket into a pipe (the loop's `PipePool`), then from the pipe into the destination socket.
/// Order on the destination: the source splices only while the destination has no output
/// queued (what was queued before, the response head or copied bytes, leaves first), and the
/// destination writes its pipe before any output queued after it (`writeOut`). Backpressure:
/// the source reads only while the pipe is empty; what the destination socket does not take
/// stays in the pipe, with the destination's write event (and write timeout) armed, and its
/// draining re-arms the source. The owner hears of every byte moved (`moved`, called from the
/// source's read callback) and keeps its decoder and counters with it; EOF and errors take the
/// stream's usual paths. Plain TCP only (no TLS either side).
extension Stream {
    /// No TLS session, and none to start: bytes on the socket are the bytes relayed.
    public var isPlainTCP: Bool { tlsSession == nil && tlsSetup == nil }

    /// The stream is in splice mode (reads go to a pipe, not to `input`).
    public var isSplicing: Bool { spliceOut != nil }

    /// What the source may still splice before its owner sets a new budget.
    public var spliceBudget: Int { spliceOut?.budget ?? 0 }

    /// Starts splicing this stream's bytes to `dst`, up to `budget` of them; `moved` is told how
    /// many went (socket to pipe: from then on they are the destination's to deliver). Returns
    /// false and changes nothing when the streams cannot splice: TLS on either side, input still
    /// buffered (those bytes go the copying way first), a closed side, another source splicing
    /// into `dst`, or no pipe to be had.
    public func startSplice(to dst: Stream, budget: Int, moved: @escaping (Int) -> Void) -> Bool {
        guard spliceOut == nil, budget > 0, dst !== self, isPlainTCP, dst.isPlainTCP, fd >= 0, dst.fd >= 0,
              state == .open, inputLength == 0, dst.state == .open || dst.state == .eof else { return false }
        let pipe: SplicePipe
        if let p = dst.spliceIn {
            guard p.source == nil else { return false }
            pipe = p   // bytes a previous source left in it go first
        } else {
            guard let p = loop.pipes.take() else { return false }
            pipe = p
            dst.spliceIn = p
        }
        pipe.source = self
        spliceOut = SpliceSource(pipe: pipe, destination: dst, budget: budget, moved: moved)
        updateReadEvent()
        return true
    }

    /// A new budget (the next chunk's payload, say): reading resumes if it was spent.
    public func setSpliceBudget(_ bytes: Int) {
        guard let s = spliceOut else { return }
        s.budget = bytes
        updateReadEvent()
    }

    /// Leaves splice mode: reads go to `input` again. Bytes already in the pipe are still
    /// delivered by the destination, before anything queued to it afterwards.
    public func stopSplice() {
        guard let s = spliceOut else { return }
        spliceOut = nil
        s.pipe.source = nil
        s.destination?.releasePipeIfDone()
        updateReadEvent()
    }

    /// Whether a splice may read now: budget left, the pipe empty, the destination's output
    /// empty (what was queued before the pipe's bytes leaves first) and its socket open.
    var spliceReady: Bool {
        guard let s = spliceOut, s.budget > 0, s.pipe.pending == 0, let dst = s.destination else { return false }
        return dst.fd >= 0 && evbuffer_get_length(dst.wire) == 0 && (dst.state == .open || dst.state == .eof)
    }

    /// The source's read callback in splice mode: socket → pipe → destination, up to 8 rounds
    /// while full pipes go straight through.
    func spliceReadable() {
        guard let s = spliceOut, let dst = s.destination else {
            updateReadEvent()
            return
        }
        var total = 0
        var n = 0
        var rounds = 0
        var readErrno: Int32 = 0
        while rounds < 8 && fd >= 0 && state == .open && spliceReady {
            let want = Swift.min(s.budget, s.pipe.capacity)
            n = airlock_splice(fd, s.pipe.writeFD, want, airlock_splice_flags())
            rounds += 1
            if n <= 0 {
                readErrno = errno
                break
            }
            s.pipe.pending += n
            s.budget -= n
            total += n
            loop.pipes.counted(n)
            dst.pushPipe()
            if n < want { break }   // the socket held less: it is empty now
        }
        if total > 0 {
            s.moved(total)   // may stop the splice, or close either stream
            updateReadEvent()
            // An EOF that came with the data is seen on the next read.
            return
        }
        if rounds == 0 {
            updateReadEvent()
        } else if n == 0 {
            // The peer closed its side: the owner hears it as from a read.
            stopSplice()
            state = .eof
            updateReadEvent()
            delegate?.stream(self, event: .eof)
        } else if readErrno != EAGAIN && readErrno != EINTR {
            stopSplice()
            fail(.error(String(cString: strerror(readErrno))))
        }
    }

    /// Writes what the inbound pipe holds (the source spliced only while this stream's output
    /// was empty, so nothing queued comes before it); the write event waits for the rest.
    func pushPipe() {
        guard let p = spliceIn, p.pending > 0, fd >= 0 else { return }
        guard writePipe(p) else { return }
        if p.pending > 0 { armWrite(true) }
    }

    /// One splice from the inbound pipe to the socket; false when the stream failed.
    func writePipe(_ p: SplicePipe) -> Bool {
        let n = airlock_splice(p.readFD, fd, p.pending, airlock_splice_flags())
        if n > 0 {
            p.pending -= n
        } else if n < 0 && errno != EAGAIN && errno != EINTR {
            let why = String(cString: strerror(errno))
            armWrite(false)
            fail(.error(why))
            return false
        }
        return true
    }

    /// After a write: an empty inbound pipe re-arms its source, or goes back to the pool.
    func inboundPipeWritten() {
        guard let p = spliceIn, p.pending == 0 else { return }
        if let src = p.source {
            src.updateReadEvent()
        } else {
            releasePipeIfDone()
        }
    }

    func releasePipeIfDone() {
        guard let p = spliceIn, p.pending == 0, p.source == nil else { return }
        spliceIn = nil
        loop.pipes.giveBack(p, on: loop)
    }

    /// Ends both roles when the stream closes: a source stops; a destination's pipe is dropped
    /// with what it holds, and the stream splicing into it goes back to reading.
    func endSplicing() {
        stopSplice()
        if let p = spliceIn {
            spliceIn = nil
            if let src = p.source { src.stopSplice() }
            if p.pending == 0 { loop.pipes.giveBack(p, on: loop) } else { loop.pipes.dropped(p) }
        }
    }
}

/// A stream's part in splicing, boxed (`Stream.splice`): its own splice as a source, and the
/// pipe it writes as a destination.
final class SpliceState {
    var out: SpliceSource?
    var inbound: SplicePipe?
}

extension Stream {
    /// This stream's splice as a source (nil: its reads go to `input`).
    var spliceOut: SpliceSource? {
        get { splice?.out }
        set { setSplice(out: newValue, inbound: splice?.inbound) }
    }

    /// The pipe this stream writes before its output (nil: none).
    var spliceIn: SplicePipe? {
        get { splice?.inbound }
        set { setSplice(out: splice?.out, inbound: newValue) }
    }

    private func setSplice(out: SpliceSource?, inbound: SplicePipe?) {
        if out == nil && inbound == nil {
            splice = nil
            return
        }
        let s = splice ?? SpliceState()
        s.out = out
        s.inbound = inbound
        splice = s
    }
}

/// A source's splice: its pipe, where the bytes go, and how many more it may move.
final class SpliceSource {
    let pipe: SplicePipe
    weak var destination: Stream?
    var budget: Int
    let moved: (Int) -> Void

    init(pipe: SplicePipe, destination: Stream, budget: Int, moved: @escaping (Int) -> Void) {
        self.pipe = pipe
        self.destination = destination
        self.budget = budget
        self.moved = moved
    }
}
