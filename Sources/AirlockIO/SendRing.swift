import CLiburing
import Glibc

/// A loop iteration's socket writes (TLS ones as ciphertext), sent with one `io_uring_enter` instead of one
/// `send` each.
///
/// Why: a loop that relays for many connections ends each iteration with a burst of small
/// writes, typically a batch of requests to one upstream. Done one `send` at a time, the
/// first one wakes the upstream, and on a shared CPU the scheduler may switch to it when
/// that `send` returns: the upstream serves one request, sleeps, and is woken again by the
/// next `send`. Submitted together, every write of the burst is in the upstream's sockets
/// before the loop can be preempted, so the upstream wakes once for the whole batch; the
/// loop also makes one system call instead of one per stream.
///
/// Each send is non-blocking (MSG_DONTWAIT): a full socket buffer completes at once with
/// EAGAIN and the stream arms its write event, exactly as after a plain `send`. Where
/// io_uring is unavailable (an old kernel, `kernel.io_uring_disabled`, a seccomp profile
/// that forbids it, as Docker's default one does) `SendRing.make` fails and streams
/// are written one `send` at a time.
final class SendRing {
    /// Sends per submission: larger batches are submitted in several.
    static let entries = 256
    /// Buffers (output chains) one send may carry: a stream whose output has more is flushed on its own.
    static let maxBuffers = 8
    /// "Not sent" (the kernel never took this send): the stream writes it itself.
    static let notSent = Int(airlock_ring_not_sent())

    private let ring: UnsafeMutablePointer<io_uring>
    private var fds: [Int32] = []
    /// Every send's buffers, one after another; send i's are `counts[i]` from `firsts[i]`.
    private var buffers: [iovec] = []
    private var firsts: [UInt32] = []
    private var counts: [UInt32] = []
    /// The sendmsg headers of sends with more than one buffer (filled by the submit).
    private var messages: [msghdr]
    private var results: [Int] = []
    /// The streams of `fds`/`buffers`, same order; kept alive until their results are in.
    private(set) var streams: [Stream] = []
    /// Set when a submission failed: the loop stops using the ring. (A send whose outcome
    /// was lost reports EIO, and its connection fails instead of sending twice.)
    private(set) var broken = false

    private init(ring: UnsafeMutablePointer<io_uring>) {
        self.ring = ring
        messages = Array(repeating: msghdr(), count: Self.entries)
        fds.reserveCapacity(Self.entries)
        buffers.reserveCapacity(Self.entries * 2)
        firsts.reserveCapacity(Self.entries)
        counts.reserveCapacity(Self.entries)
        results.reserveCapacity(Self.entries)
        streams.reserveCapacity(Self.entries)
    }

    /// A ring, or the reason io_uring cannot be used here.
    static func make() -> Result<SendRing, IOError> {
        var err: Int32 = 0
        guard let r = airlock_ring_new(UInt32(entries), &err) else {
            return .failure(IOError(.ioUring, "io_uring_setup: \(String(cString: strerror(err)))"))
        }
        return .success(SendRing(ring: r))
    }

    deinit { airlock_ring_free(ring) }

    var isFull: Bool { fds.count == Self.entries }
    var isEmpty: Bool { fds.isEmpty }

    /// Queues one send of `buffer`, which must stay valid and unchanged until `submit`.
    func add(_ stream: Stream, fd: Int32, buffer: iovec) {
        streams.append(stream)
        fds.append(fd)
        firsts.append(UInt32(buffers.count))
        counts.append(1)
        buffers.append(buffer)
    }

    /// Queues one send of `buffers` in order (1...`maxBuffers` of them), which must stay
    /// valid and unchanged until `submit`.
    func add(_ stream: Stream, fd: Int32, buffers some: UnsafeBufferPointer<iovec>) {
        precondition(some.count >= 1 && some.count <= Self.maxBuffers)
        streams.append(stream)
        fds.append(fd)
        firsts.append(UInt32(buffers.count))
        counts.append(UInt32(some.count))
        buffers.append(contentsOf: some)
    }

    /// Submits the queued sends; then `result(i)` is send `i`'s outcome: bytes sent,
    /// -errno, or `notSent`.
    func submit() {
        let n = fds.count
        results.removeAll(keepingCapacity: true)
        guard n > 0 else { return }
        results.append(contentsOf: repeatElement(Self.notSent, count: n))
        let rc = fds.withUnsafeBufferPointer { f in
            buffers.withUnsafeBufferPointer { b in
                firsts.withUnsafeBufferPointer { first in
                    counts.withUnsafeBufferPointer { count in
                        messages.withUnsafeMutableBufferPointer { m in
                            results.withUnsafeMutableBufferPointer { r in
                                airlock_ring_send_all(ring, UInt32(n), f.baseAddress, b.baseAddress, first.baseAddress,
                                                      count.baseAddress, m.baseAddress, r.baseAddress)
                            }
                        }
                    }
                }
            }
        }
        if rc != 0 { broken = true }
    }

    var count: Int { fds.count }
    func result(_ i: Int) -> Int { results[i] }

    /// Empties the queue (after the results are used).
    func clear() {
        fds.removeAll(keepingCapacity: true)
        buffers.removeAll(keepingCapacity: true)
        firsts.removeAll(keepingCapacity: true)
        counts.removeAll(keepingCapacity: true)
        streams.removeAll(keepingCapacity: true)
        results.removeAll(keepingCapacity: true)
    }
}
