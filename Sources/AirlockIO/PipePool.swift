import CLibevent
import Glibc

/// A pipe that `splice(2)` moves bytes through, socket to pipe to socket, without copying them
/// into user space (`Stream+Splice`). While a source splices into it, the source holds it
/// (`SpliceSource.pipe`) and so does the destination (`Stream.spliceIn`), which writes what it
/// holds before any output queued after it; bytes left in it after the source stopped (or
/// closed) are still delivered. The descriptors close with the last reference.
final class SplicePipe {
    let readFD: Int32
    let writeFD: Int32
    /// What the pipe holds when full (one splice moves at most this much).
    let capacity: Int
    /// Bytes in the pipe: spliced in from the source, not yet taken by the destination socket.
    var pending = 0
    /// The stream splicing into this pipe, while it does (re-armed when the pipe drains).
    weak var source: Stream?

    init(readFD: Int32, writeFD: Int32, capacity: Int) {
        self.readFD = readFD
        self.writeFD = writeFD
        self.capacity = capacity
    }

    deinit {
        Glibc.close(readFD)
        Glibc.close(writeFD)
    }
}

/// One loop's spare pipes (HAProxy's pipe pool): made on demand with
/// `pipe2(O_NONBLOCK | O_CLOEXEC)` and grown to `size`, given back when empty. Spares are kept
/// only while other pipes are in use (a loop under bulk load reuses them), at most `spareMax`,
/// and not past `idleTrim` without a pipe taken: a worker with no splice under way holds no
/// pipe descriptor. Also counts what its loop spliced, for tests and metrics.
public final class PipePool {
    private var spare: [SplicePipe] = []
    static let spareMax = 8
    static let idleTrim: Duration = .seconds(1)
    private var trimTimer: Timer?
    private var takenSinceTrim = false
    /// What a new pipe is grown to (`F_SETPIPE_SZ`; the default of 64 KiB when refused).
    static let size: Int32 = 256 * 1024

    /// Bytes this loop moved socket to pipe (each is delivered unless the destination fails).
    public private(set) var splicedBytes: UInt64 = 0
    /// Pipes this loop made (not taken from the spares).
    public private(set) var pipesMade = 0
    /// Pipes waiting in the pool now.
    public var spareCount: Int { spare.count }
    /// Pipes taken and neither given back nor dropped.
    public private(set) var inUse = 0

    init() {}

    /// An empty pipe, or nil when none can be made (out of descriptors): the caller copies.
    func take() -> SplicePipe? {
        takenSinceTrim = true
        if let p = spare.popLast() {
            inUse += 1
            return p
        }
        var fds: (Int32, Int32) = (-1, -1)
        let r = withUnsafeMutablePointer(to: &fds) {
            $0.withMemoryRebound(to: Int32.self, capacity: 2) { airlock_pipe($0) }
        }
        guard r == 0 else { return nil }
        // A larger pipe, fewer splices; best effort (the kernel's default is 64 KiB).
        let size = airlock_set_pipe_size(fds.1, Self.size)
        pipesMade += 1
        inUse += 1
        return SplicePipe(readFD: fds.0, writeFD: fds.1, capacity: size > 0 ? Int(size) : 65536)
    }

    /// Takes back a pipe nothing uses any more: kept if empty and there is room, else closed.
    func giveBack(_ p: SplicePipe, on loop: EventLoop) {
        p.source = nil
        inUse -= 1
        guard inUse > 0 else {   // nothing splices on this loop now: no spare is kept
            spare.removeAll()
            return
        }
        guard p.pending == 0 && spare.count < Self.spareMax else { return }
        spare.append(p)
        let timer = trimTimer ?? Timer(loop: loop) { [unowned self] in self.trim() }
        trimTimer = timer
        if !timer.isScheduled {
            takenSinceTrim = false
            timer.schedule(after: Self.idleTrim)
        }
    }

    /// The spares go once a whole `idleTrim` passed without a pipe taken.
    private func trim() {
        if takenSinceTrim && !spare.isEmpty {
            takenSinceTrim = false
            trimTimer?.schedule(after: Self.idleTrim)
            return
        }
        spare.removeAll()
    }

    /// A pipe closed with bytes still in it (its destination closed): not kept.
    func dropped(_ p: SplicePipe) {
        p.source = nil
        inUse -= 1
        if inUse == 0 { spare.removeAll() }
    }

    func counted(_ n: Int) { splicedBytes &+= UInt64(n) }
}
