@testable import AirlockIO
import AirlockTesting
import CLibevent   // socket constants (SOCK_STREAM, SOCK_DGRAM, SOCK_NONBLOCK) come with its socket headers
import Glibc
import Synchronization
import XCTest

// Foundation (through XCTest) has its own Stream and StreamDelegate.
private typealias Stream = AirlockIO.Stream
private typealias StreamDelegate = AirlockIO.StreamDelegate

/// The loop's end-of-iteration writes, through io_uring (`SendRing`) and through one
/// `send` per stream, over real TCP connections on 127.0.0.1. Each test runs in both
/// modes; the io_uring mode is skipped, and says so, where this kernel does not allow it.
final class SendRingTests: XCTestCase {
    private var cleanup: [() -> Void] = []

    override func tearDown() {
        for c in cleanup.reversed() { c() }
        cleanup = []
    }

    private func loop(batching: Bool) throws -> EventLoop {
        let loop = EventLoop(name: "test", batchSends: batching)
        if batching {
            try Requirement.check(loop.batchesSends, "io_uring unavailable here: \(loop.sendBatching)")
        } else {
            XCTAssertFalse(loop.batchesSends)
            XCTAssertEqual(loop.sendBatching, "send per stream (io_uring: off)")
        }
        return loop
    }

    /// `tcpPair()` with `buffers`-byte socket buffers where the stream sends and the test reads.
    private func tcpPair(buffers: Int32) throws -> (Int32, Int32) {
        let (a, c) = try tcpPair()
        var size = buffers
        setsockopt(a, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(c, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return (a, c)
    }

    /// Runs `loop` and reads `fd` (`chunk` bytes at a time) in turn until `count` bytes came
    /// or 20 seconds passed; what came.
    private func runReading(_ loop: EventLoop, _ fd: Int32, count: Int, chunk: Int) -> [UInt8] {
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: chunk)
        let deadline = EventLoop.nowNanos() + 20_000_000_000
        while got.count < count && EventLoop.nowNanos() < deadline {
            loop.runOnce(blocking: false)
            let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
            if n > 0 { got += buf[0..<n] } else { usleep(100) }
        }
        return got
    }

    /// A connected pair on 127.0.0.1 (`LocalSocket.tcpPair`), the client end closed at tear-down.
    private func tcpPair() throws -> (Int32, Int32) {
        let (a, c) = try LocalSocket.tcpPair()
        cleanup.append { close(c) }
        return (a, c)
    }

    /// Reads from `fd` until `count` bytes or EOF/timeout.
    private func read(_ fd: Int32, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while out.count < count {
            let n = recv(fd, &buf, Swift.min(buf.count, count - out.count), 0)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    /// Whether `fd` reaches EOF with no further bytes (within the receive timeout).
    private func atEOF(_ fd: Int32) -> Bool {
        var b: UInt8 = 0
        return recv(fd, &b, 1, 0) == 0
    }

    private func payload(_ i: Int, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i &* 7) }
    }

    // MARK: tests (each in both modes)

    func testOneIterationWritesEveryStream_ioUring() throws { try oneIterationWritesEveryStream(batching: true) }
    func testOneIterationWritesEveryStream_sendPerStream() throws { try oneIterationWritesEveryStream(batching: false) }

    func testPartialWriteResumesOnTheWriteEvent_ioUring() throws { try partialWriteResumesOnTheWriteEvent(batching: true) }
    func testPartialWriteResumesOnTheWriteEvent_sendPerStream() throws { try partialWriteResumesOnTheWriteEvent(batching: false) }

    func testCallbackClosingALaterStreamOfTheBatchDoesNotResendIt_ioUring() throws { try callbackClosingALaterStreamOfTheBatchDoesNotResendIt(batching: true) }
    func testCallbackClosingALaterStreamOfTheBatchDoesNotResendIt_sendPerStream() throws { try callbackClosingALaterStreamOfTheBatchDoesNotResendIt(batching: false) }

    func testAReferencedWriteArrivesWholeAndIsReleased_ioUring() throws { try referencedWrite(batching: true) }
    func testAReferencedWriteArrivesWholeAndIsReleased_sendPerStream() throws { try referencedWrite(batching: false) }

    func testOutputInSeveralChainsGoesOutInOneSend_ioUring() throws { try outputInSeveralChains(batching: true) }
    func testOutputInSeveralChainsGoesOutInOneSend_sendPerStream() throws { try outputInSeveralChains(batching: false) }

    func testFailedSendIsReportedAndTheRestOfTheBatchGoesOut_ioUring() throws { try failedSendIsReportedAndTheRestOfTheBatchGoesOut(batching: true) }
    func testFailedSendIsReportedAndTheRestOfTheBatchGoesOut_sendPerStream() throws { try failedSendIsReportedAndTheRestOfTheBatchGoesOut(batching: false) }


    /// More streams than one submission holds (256): every stream's bytes reach its own
    /// peer, whole and once, after one iteration.
    private func oneIterationWritesEveryStream(batching: Bool) throws {
        let loop = try loop(batching: batching)
        let n = SendRing.entries + 44
        var streams: [Stream] = []
        var peers: [Int32] = []
        for i in 0..<n {
            let (a, c) = try tcpPair()
            let s = Stream(loop: loop, fd: a)
            s.write(Array("stream \(i): ".utf8) + payload(i, 100 + i))
            streams.append(s)
            peers.append(c)
        }
        loop.runOnce(blocking: false)
        for (i, c) in peers.enumerated() {
            let want = Array("stream \(i): ".utf8) + payload(i, 100 + i)
            XCTAssertEqual(read(c, count: want.count), want, "stream \(i)")
            XCTAssertEqual(streams[i].outputLength, 0)
        }
        for s in streams { s.close() }
    }

    /// `writeReference` (the cache's large hits): 4 MiB queued without a copy, between a head
    /// and a trailer written by copy, reach the peer whole and in order over many write events;
    /// once sent, libevent releases the storage (no referenced write is left alive).
    private func referencedWrite(batching: Bool) throws {
        let loop = try loop(batching: batching)
        let (a, c) = try tcpPair()
        let live = ReferencedBytes.live.load(ordering: .relaxed)
        let s = Stream(loop: loop, fd: a)
        let body = payload(5, 4 << 20)
        s.write(Array("head|".utf8))
        s.writeReference(body)
        s.write(Array("|tail".utf8))
        XCTAssertEqual(ReferencedBytes.live.load(ordering: .relaxed), live + 1)
        let want = Array("head|".utf8) + body + Array("|tail".utf8)
        var got: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        var rounds = 0
        while got.count < want.count && rounds < 200_000 {   // bounded: 4 MiB take a few hundred
            rounds += 1
            loop.runOnce(blocking: false)
            let n = recv(c, &buf, buf.count, Int32(MSG_DONTWAIT))
            if n > 0 { got += buf[0..<n] }
        }
        XCTAssertEqual(got.count, want.count)
        XCTAssertTrue(got == want, "every byte, in order")
        XCTAssertEqual(s.outputLength, 0)
        XCTAssertEqual(ReferencedBytes.live.load(ordering: .relaxed), live, "the storage is released once sent")
        s.close()

        // A referenced write as a stream's first output (its output buffer taken for it, not
        // the loop's shared empty one), beside a stream that writes nothing.
        let (a2, c2) = try tcpPair()
        let (a3, _) = try tcpPair()
        let first = Stream(loop: loop, fd: a2)
        let idle = Stream(loop: loop, fd: a3)
        let small = payload(9, 40_000)
        first.writeReference(small)
        XCTAssertEqual(idle.outputLength, 0, "nothing lands in another stream's output")
        var got2: [UInt8] = []
        rounds = 0
        while got2.count < small.count && rounds < 200_000 {
            rounds += 1
            loop.runOnce(blocking: false)
            let n = recv(c2, &buf, buf.count, Int32(MSG_DONTWAIT))
            if n > 0 { got2 += buf[0..<n] }
        }
        XCTAssertTrue(got2 == small, "\(got2.count) of \(small.count) bytes")
        XCTAssertEqual(ReferencedBytes.live.load(ordering: .relaxed), live)
        first.close()
        idle.close()
    }

    /// Output in several chains (each referenced write is a chain of its own, and so is the
    /// copied separator after it), as a relayed bulk body leaves it: up to
    /// `SendRing.maxBuffers` chains go out in the ring's one send (a sendmsg), more are written
    /// by the stream alone (a writev of up to `Stream.writeIOVecs`); either way each peer gets
    /// every byte in order in one iteration.
    /// Then a many-chain output larger than its socket buffer: the ring's send takes part, the
    /// rest follows on write events, in order.
    private func outputInSeveralChains(batching: Bool) throws {
        let loop = try loop(batching: batching)
        let chainCounts = [2, 3, SendRing.maxBuffers, SendRing.maxBuffers + 1, Stream.writeIOVecs]
        var streams: [Stream] = []
        var peers: [Int32] = []
        var wants: [[UInt8]] = []
        for (i, chains) in chainCounts.enumerated() {
            let (a, c) = try tcpPair()
            let s = Stream(loop: loop, fd: a)
            var want: [UInt8] = []
            // chains: reference, separator, reference, separator, ... (odd counts end on a reference)
            for k in 0..<chains {
                if k % 2 == 0 {
                    let part = payload(i * 100 + k, 700 + 37 * k)
                    s.writeReference(part)
                    want += part
                } else {
                    let sep = Array("|\(i).\(k)|".utf8)
                    s.write(sep)
                    want += sep
                }
            }
            streams.append(s)
            peers.append(c)
            wants.append(want)
        }
        let alone = loop.flushedAlone
        loop.runOnce(blocking: false)
        for (i, c) in peers.enumerated() {
            XCTAssertEqual(read(c, count: wants[i].count), wants[i], "stream \(i): \(chainCounts[i]) chains")
            XCTAssertEqual(streams[i].outputLength, 0, "stream \(i)")
        }
        if batching {
            XCTAssertEqual(loop.flushedAlone - alone, chainCounts.filter { $0 > SendRing.maxBuffers }.count,
                           "only outputs in more than \(SendRing.maxBuffers) chains are written alone")
        }
        for s in streams { s.close() }

        // Larger than the socket: three referenced MiB, each followed by a separator (six
        // chains), through 16 KiB socket buffers.
        let (a, c) = try tcpPair(buffers: 16384)
        let s = Stream(loop: loop, fd: a)
        var want: [UInt8] = []
        for k in 0..<3 {
            let part = payload(50 + k, 1 << 20)
            s.writeReference(part)
            s.write(Array("<\(k)>".utf8))
            want += part + Array("<\(k)>".utf8)
        }
        let got = runReading(loop, c, count: want.count, chunk: 65536)
        XCTAssertEqual(got.count, want.count)
        XCTAssertTrue(got == want, "bytes out of order or corrupted")
        XCTAssertEqual(s.outputLength, 0)
        s.close()
    }

    /// A write larger than the socket takes: the kernel takes part (or nothing, EAGAIN),
    /// the rest waits for the write event, and the peer receives every byte in order.
    private func partialWriteResumesOnTheWriteEvent(batching: Bool) throws {
        let loop = try loop(batching: batching)
        let (a, c) = try tcpPair(buffers: 16384)
        let s = Stream(loop: loop, fd: a)
        let delegate = Recorder()
        s.delegate = delegate
        let body = payload(3, 4 << 20)
        s.write(body)
        loop.runOnce(blocking: false)
        XCTAssertGreaterThan(s.outputLength, 0, "a 4 MiB write fits a 16 KiB socket buffer")
        XCTAssertEqual(delegate.writable, 0, "not drained yet")
        // Now the peer reads, 4 KiB at a time, between loop iterations.
        let got = runReading(loop, c, count: body.count, chunk: 4096)
        XCTAssertEqual(s.outputLength, 0)
        XCTAssertEqual(delegate.writable, 1, "told once, when the output drained")
        XCTAssertEqual(got.count, body.count)
        XCTAssertTrue(got == body, "bytes out of order or corrupted")
        s.close()
    }

    /// A callback run for one stream's write may act on another stream of the same batch:
    /// here it closes it after a flush. The other stream's bytes already went out in the
    /// batch, so they must not be sent a second time.
    private func callbackClosingALaterStreamOfTheBatchDoesNotResendIt(batching: Bool) throws {
        let loop = try loop(batching: batching)
        let (a1, c1) = try tcpPair()
        let (a2, c2) = try tcpPair()
        let first = Stream(loop: loop, fd: a1)
        let second = Stream(loop: loop, fd: a2)
        let delegate = Recorder()
        delegate.onWritable = { _ in second.closeAfterFlush() }
        first.delegate = delegate
        first.write(Array("first".utf8))
        second.write(Array("second".utf8))
        loop.runOnce(blocking: false)
        XCTAssertEqual(read(c1, count: 5), Array("first".utf8))
        XCTAssertEqual(read(c2, count: 6), Array("second".utf8))
        XCTAssertTrue(atEOF(c2), "the second stream's bytes went out twice, or it was not closed")
        first.close()
    }

    /// A send that fails (the peer reset the connection) reaches the stream's owner as an
    /// error, and the other streams of the batch are written normally.
    private func failedSendIsReportedAndTheRestOfTheBatchGoesOut(batching: Bool) throws {
        let loop = try loop(batching: batching)
        let (a1, c1) = try tcpPair()
        let (a2, c2) = try tcpPair()
        // c1 resets its connection (linger 0), and a1 learns of it by a first write.
        var lin = linger(l_onoff: 1, l_linger: 0)
        setsockopt(c1, SOL_SOCKET, SO_LINGER, &lin, socklen_t(MemoryLayout<linger>.size))
        close(c1)
        let broken = Stream(loop: loop, fd: a1)
        let fine = Stream(loop: loop, fd: a2)
        let delegate = Recorder()
        broken.delegate = delegate
        usleep(20_000)
        broken.write(Array("lost".utf8))
        fine.write(Array("kept".utf8))
        let deadline = EventLoop.nowNanos() + 5_000_000_000
        while delegate.events.isEmpty && EventLoop.nowNanos() < deadline {
            loop.runOnce(blocking: false)
            if delegate.events.isEmpty { broken.write(Array("again".utf8)); usleep(1000) }
        }
        XCTAssertEqual(read(c2, count: 4), Array("kept".utf8))
        guard case .error(let why)? = delegate.events.first else {
            return XCTFail("no error event: \(delegate.events)")
        }
        XCTAssertTrue(why.contains("reset") || why.contains("pipe"), why)
        broken.close()
        fine.close()
    }
}

private final class Recorder: StreamDelegate {
    var writable = 0
    var events: [StreamEvent] = []
    var onWritable: ((Stream) -> Void)?
    func streamReadable(_ stream: Stream) {}
    func streamWritable(_ stream: Stream) {
        writable += 1
        onWritable?(stream)
    }
    func stream(_ stream: Stream, event: StreamEvent) { events.append(event) }
}
