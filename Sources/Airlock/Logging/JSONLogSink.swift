#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Synchronization

/// write(2), named apart from `JSONLogSink.write(line:)`.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, buffer, count)
    #elseif canImport(Musl)
    return Musl.write(fd, buffer, count)
    #else
    return Darwin.write(fd, buffer, count)
    #endif
}

/// Where JSON log lines go: a file descriptor or a closure (tests). Every handler writing to
/// the same place must share one sink: its write lock is what keeps lines whole.
///
/// Two ways in:
/// - `write(line:)`, from any thread (lifecycle records): written at once, after whatever
///   batches are queued (so a record logged after the workers stopped follows their records).
/// - `submit(_:records:)`, from a worker's `LogBuffer`: whole lines handed over in a batch and
///   queued; the caller never blocks on the descriptor. A writer thread writes the queue when
///   it holds `flushBytes` or at least every `flushInterval`, in one write(2) per round. The
///   queue (plus the round being written) is bounded by `capacity`: a batch that does not fit
///   is dropped whole and its records counted (`droppedRecords`); once a write succeeds again
///   an `airlock.log-dropped` record says how many.
public final class JSONLogSink: @unchecked Sendable {
    private enum Target {
        case fileDescriptor(Int32)
        case closure(@Sendable (String) -> Void)
    }

    private struct Queue {
        var batches: [[UInt8]] = []
        /// Bytes queued or in the round being written.
        var bytes = 0
        var capacity: Int
        var droppedUnreported: UInt64 = 0
        var writerStarted = false
        var wakePosted = false
    }

    private let target: Target
    /// Held while bytes go to the target: one writer at a time, a partial write finished
    /// before anyone else writes.
    private let writeLock = Mutex<[UInt8]>([])
    private let queue: Mutex<Queue>
    private let wake: UnsafeMutablePointer<sem_t>
    private let dropped = Atomic<UInt64>(0)

    /// A round of queued batches is written once this many bytes are queued...
    public static let flushBytes = 64 * 1024
    /// ...or this long after the last round (milliseconds), whichever comes first.
    public static let flushIntervalMillis = 100
    /// The queue bound each `LogBuffer` adds (`reserve(perBuffer:)`).
    public static let capacityPerBuffer = 1 << 20

    /// Standard output, shared by every handler `AirlockLogging.bootstrap` makes.
    public static let standardOutput = JSONLogSink(fileDescriptor: 1)

    /// Writes each line plus "\n" to `fileDescriptor`. The sink does not own or close the
    /// descriptor, and never changes its flags (no O_NONBLOCK on a shared stdout).
    public init(fileDescriptor: Int32, capacity: Int = 0) {
        self.target = .fileDescriptor(fileDescriptor)
        self.queue = Mutex(Queue(capacity: capacity))
        wake = .allocate(capacity: 1)
        sem_init(wake, 0, 0)
    }

    /// Hands each line, without its trailing newline, to `write`; calls are serialised.
    /// Submitted batches are handed over at once, on the submitting thread.
    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.target = .closure(write)
        self.queue = Mutex(Queue(capacity: 0))
        wake = .allocate(capacity: 1)
        sem_init(wake, 0, 0)
    }

    deinit {
        // Only sinks whose writer never started are freed (the writer keeps its sink).
        sem_destroy(wake)
        wake.deallocate()
    }

    /// Records dropped since the sink was made because the queue was full (a counter for
    /// metrics; also reported in `airlock.log-dropped` records).
    public var droppedRecords: UInt64 { dropped.load(ordering: .relaxed) }

    /// Bytes queued or being written now.
    var queuedBytes: Int { queue.withLock { $0.bytes } }

    /// Raises the queue bound by `bytes` (each worker's buffer reserves its share).
    func reserve(_ bytes: Int) {
        queue.withLock { $0.capacity += bytes }
    }

    /// `line` is one JSON object ending in "\n". Written before returning, after the batches
    /// already queued.
    func write(line: [UInt8]) {
        writeLock.withLock { scratch in
            writeQueued(&scratch)
            emit(line)
        }
    }

    /// Hands over `batch`, `records` whole lines each ending in "\n". Never blocks on the
    /// descriptor. False when the batch was dropped (the queue is full).
    @discardableResult
    func submit(_ batch: [UInt8], records: Int) -> Bool {
        if case .closure = target {
            writeLock.withLock { _ in emit(batch) }
            return true
        }
        let (accepted, startWriter, wakeWriter) = queue.withLock { q -> (Bool, Bool, Bool) in
            guard q.bytes + batch.count <= q.capacity else {
                q.droppedUnreported += UInt64(records)
                return (false, false, false)
            }
            q.batches.append(batch)
            q.bytes += batch.count
            let start = !q.writerStarted
            q.writerStarted = true
            let wakeNow = q.bytes >= Self.flushBytes && !q.wakePosted
            if wakeNow { q.wakePosted = true }
            return (true, start, wakeNow)
        }
        if !accepted {
            dropped.add(UInt64(records), ordering: .relaxed)
            return false
        }
        if startWriter { startWriterThread() }
        if wakeWriter { sem_post(wake) }
        return true
    }

    /// Writes everything queued now, on the calling thread.
    func flush() {
        writeLock.withLock { writeQueued(&$0) }
    }

    /// One round: the queued batches in one write, then an `airlock.log-dropped` record if
    /// batches were dropped since the last one. Called with the write lock held.
    private func writeQueued(_ scratch: inout [UInt8]) {
        let batches = queue.withLock { q -> [[UInt8]] in
            q.wakePosted = false
            defer { q.batches.removeAll(keepingCapacity: true) }
            return q.batches
        }
        if !batches.isEmpty {
            var written = 0
            if batches.count == 1 {
                emit(batches[0])
                written = batches[0].count
            } else {
                scratch.removeAll(keepingCapacity: true)
                for b in batches { scratch.append(contentsOf: b) }
                emit(scratch)
                written = scratch.count
                if scratch.capacity > 4 * Self.flushBytes { scratch = [] }
            }
            queue.withLock { $0.bytes -= written }
        }
        let lost = queue.withLock { q -> UInt64 in
            defer { q.droppedUnreported = 0 }
            return q.droppedUnreported
        }
        if lost > 0 { emit(droppedRecord(lost)) }
    }

    private func droppedRecord(_ lost: UInt64) -> [UInt8] {
        JSONLogHandler.encode(level: .warning, message: "airlock.log-dropped", metadata: [
            "dropped": .stringConvertible(lost),
            "dropped_total": .stringConvertible(droppedRecords),
            "message": .string("the log output did not keep up: \(lost) records were dropped"),
        ])
    }

    private func emit(_ bytes: [UInt8]) {
        switch target {
        case .fileDescriptor(let fd):
            bytes.withUnsafeBytes { Self.writeFully(fd, $0) }
        case .closure(let write):
            var start = 0
            for i in bytes.indices where bytes[i] == UInt8(ascii: "\n") {
                write(String(decoding: bytes[start..<i], as: UTF8.self))
                start = i + 1
            }
        }
    }

    private func startWriterThread() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var t = pthread_t()
        let rc = pthread_create(&t, nil, { arg in
            Unmanaged<JSONLogSink>.fromOpaque(arg!).takeUnretainedValue().runWriter()
            return nil
        }, box)
        if rc == 0 { pthread_detach(t) } else { Unmanaged<JSONLogSink>.fromOpaque(box).release() }
    }

    /// The writer thread: a round when `flushBytes` are queued (woken by `submit`) or
    /// `flushIntervalMillis` after the last one. Lives as long as the process.
    private func runWriter() -> Never {
        while true {
            var deadline = timespec()
            clock_gettime(CLOCK_REALTIME, &deadline)
            deadline.tv_nsec += Self.flushIntervalMillis * 1_000_000
            if deadline.tv_nsec >= 1_000_000_000 {
                deadline.tv_sec += 1
                deadline.tv_nsec -= 1_000_000_000
            }
            while sem_timedwait(wake, &deadline) != 0 && errno == EINTR {}
            flush()
        }
    }

    /// Loops on a short write or EINTR. Other errors (EPIPE, a closed descriptor) drop the
    /// bytes: logging must never take the process down.
    private static func writeFully(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
