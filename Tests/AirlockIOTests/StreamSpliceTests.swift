@testable import AirlockIO
import CLibevent   // socket constants (SOCK_STREAM) come with its socket headers, as in StreamOutputBufferTests
import Glibc
import XCTest

/// `Stream+Splice` on real sockets (socketpairs), the loop run one non-blocking iteration at a
/// time on the test's thread: bytes go socket → pipe → socket in order, behind the output queued
/// before them and ahead of what is queued after; the source stops reading while its pipe holds
/// bytes (backpressure); EOF takes the stream's usual path; `closeAfterFlush` waits for the pipe;
/// pipes go back to the loop's pool.
final class StreamSpliceTests: XCTestCase {
    private final class Recorder: AirlockIO.StreamDelegate {
        var events: [StreamEvent] = []
        var readable = 0
        func streamReadable(_ stream: AirlockIO.Stream) { readable += 1 }
        func streamWritable(_ stream: AirlockIO.Stream) {}
        func stream(_ stream: AirlockIO.Stream, event: StreamEvent) { events.append(event) }
    }

    private struct Pair {
        let loop: EventLoop
        let src: AirlockIO.Stream, dst: AirlockIO.Stream
        let feed: Int32      // the test writes here; `src` reads the other end
        let drain: Int32     // the test reads here; `dst` writes the other end

        /// Closes both test ends and both streams.
        func close() {
            Glibc.close(feed)
            Glibc.close(drain)
            src.close()
            dst.close()
        }
    }

    /// A pair, and another on its loop that splices without end (so a pipe emptied by the
    /// first is kept as a spare while it does).
    private func pairBesideAnotherSplice() throws -> (Pair, other: Pair) {
        let p = try pair()
        let other = try pair(on: p.loop)
        XCTAssertTrue(other.src.startSplice(to: other.dst, budget: .max) { _ in })
        return (p, other)
    }

    private func pair(on shared: EventLoop? = nil) throws -> Pair {
        let loop = shared ?? EventLoop(name: "splice")
        let (a, feed) = try LocalSocket.pair()
        let (b, drain) = try LocalSocket.pair()
        return Pair(loop: loop, src: AirlockIO.Stream(loop: loop, fd: a), dst: AirlockIO.Stream(loop: loop, fd: b),
                    feed: feed, drain: drain)
    }

    func testSplicedBytesFollowEarlierOutputAndPrecedeLaterOutput() throws {
        let p = try pair()
        defer { p.close() }
        let recorder = Recorder()
        p.src.delegate = recorder
        let total = 4 << 20
        let body = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
        var moved = 0
        p.dst.write(Array("HEAD".utf8))
        XCTAssertTrue(p.src.startSplice(to: p.dst, budget: total) { moved += $0 })
        XCTAssertTrue(p.src.isSplicing)
        // Feed without reading the far end until the splice stalls: the pipe holds bytes.
        var fed = 0
        var tailAt = -1
        var received: [UInt8] = []
        for _ in 0..<100_000 where received.count < total + 8 {
            fed += Self.writeSome(p.feed, body, from: fed)
            _ = p.loop.runOnce(blocking: false)
            if tailAt < 0 {
                if p.dst.outputLength > 0 && (0..<20).allSatisfy({ _ in
                    fed += Self.writeSome(p.feed, body, from: fed)
                    _ = p.loop.runOnce(blocking: false)
                    return p.dst.outputLength > 0
                }) {
                    tailAt = moved
                    p.dst.write(Array("TAIL".utf8))   // queued behind the pipe's bytes
                }
                continue
            }
            received += LocalSocket.readAvailable(p.drain)
        }
        XCTAssertGreaterThan(tailAt, 0, "the pipe held bytes when the tail was queued")
        guard tailAt > 0 else { return }
        XCTAssertEqual(moved, total)
        XCTAssertEqual(recorder.readable, 0, "spliced bytes never pass through the input")
        XCTAssertEqual(p.loop.pipes.splicedBytes, UInt64(total))
        let expected = Array("HEAD".utf8) + body[..<tailAt] + Array("TAIL".utf8) + body[tailAt...]
        XCTAssertEqual(received.count, expected.count)
        XCTAssertTrue(received == expected, "the bytes arrived in order")
    }

    func testTheSourceStopsReadingWhileItsPipeHoldsBytes() throws {
        let p = try pair()
        defer { p.close() }
        let recorder = Recorder()
        p.src.delegate = recorder
        var moved = 0
        XCTAssertTrue(p.src.startSplice(to: p.dst, budget: .max) { moved += $0 })
        let chunk = [UInt8](repeating: 7, count: 1 << 20)
        var fed = 0
        var stalledRounds = 0
        for _ in 0..<10_000 where stalledRounds < 50 {
            let n = Self.writeSome(p.feed, chunk, from: 0)
            fed += n
            let before = moved
            _ = p.loop.runOnce(blocking: false)
            stalledRounds = n == 0 && moved == before ? stalledRounds + 1 : 0
        }
        XCTAssertEqual(stalledRounds, 50, "the feed stalled")
        let pending = p.dst.outputLength
        XCTAssertGreaterThan(pending, 0, "the pipe holds what the destination socket did not take")
        let pipe = try XCTUnwrap(p.dst.spliceIn)
        XCTAssertLessThanOrEqual(pending, pipe.capacity, "nothing is read past the pipe")
        XCTAssertFalse(p.src.readArmed, "the source does not read while its pipe holds bytes")
        XCTAssertGreaterThan(fed, moved, "unread bytes wait in the source's socket")
        // The far end reads: everything fed arrives, and the source reads again.
        var received = 0
        for _ in 0..<100_000 where received < fed {
            received += LocalSocket.readAvailable(p.drain).count
            _ = p.loop.runOnce(blocking: false)
        }
        XCTAssertEqual(received, fed)
        XCTAssertEqual(moved, fed)
        XCTAssertEqual(p.dst.outputLength, 0)
    }

    func testEOFIsReportedAndThePipeStillDeliversBeforeTheClose() throws {
        let p = try pair()
        defer { close(p.feed); close(p.drain); p.src.close() }
        let recorder = Recorder()
        p.src.delegate = recorder
        var moved = 0
        XCTAssertTrue(p.src.startSplice(to: p.dst, budget: .max) { moved += $0 })
        let body = Array("the last bytes before the close".utf8)
        XCTAssertEqual(Self.writeSome(p.feed, body, from: 0), body.count)
        shutdown(p.feed, Int32(SHUT_WR))
        for _ in 0..<1000 where recorder.events.isEmpty { _ = p.loop.runOnce(blocking: false) }
        XCTAssertEqual(recorder.events, [.eof])
        XCTAssertEqual(moved, body.count)
        XCTAssertFalse(p.src.isSplicing, "an EOF ends splice mode")
        p.dst.closeAfterFlush()
        var received: [UInt8] = []
        var closed = false
        for _ in 0..<1000 where !closed {
            _ = p.loop.runOnce(blocking: false)
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = buf.withUnsafeMutableBytes { recv(p.drain, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buf[..<n] } else if n == 0 { closed = true }
        }
        XCTAssertTrue(closed, "the destination half-closed after its pipe")
        XCTAssertEqual(received, body)
    }

    /// A body spliced whole while the destination's peer reads nothing: the last bytes wait in
    /// the pipe, and a close after flush delivers them before the half-close.
    func testCloseAfterFlushWaitsForThePipe() throws {
        let p = try pair()
        defer { close(p.feed); close(p.drain); p.src.close() }
        // The destination socket full first (bytes sent past the stream): the body stays in the pipe.
        var prefix: [UInt8] = []
        let block = [UInt8](repeating: 0x2d, count: 4096)
        while true {
            let n = block.withUnsafeBytes { send(p.dst.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            prefix += block[..<n]
        }
        let total = 48 << 10
        let body = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        var moved = 0
        XCTAssertTrue(p.src.startSplice(to: p.dst, budget: total) { moved += $0 })
        var fed = 0
        var received: [UInt8] = []
        for _ in 0..<100_000 where moved < total {
            fed += Self.writeSome(p.feed, body, from: fed)
            _ = p.loop.runOnce(blocking: false)
        }
        XCTAssertEqual(moved, total)
        XCTAssertGreaterThan(p.dst.outputLength, 0, "the pipe still holds the body's last bytes")
        p.src.stopSplice()
        p.dst.closeAfterFlush()
        var closed = false
        for _ in 0..<100_000 where !closed {
            _ = p.loop.runOnce(blocking: false)
            var buf = [UInt8](repeating: 0, count: 65536)
            let n = buf.withUnsafeMutableBytes { recv(p.drain, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buf[..<n] } else if n == 0 { closed = true }
        }
        XCTAssertTrue(closed)
        XCTAssertEqual(received.count, prefix.count + total)
        XCTAssertTrue(received == prefix + body, "every byte, in order, before the close")
    }

    /// While another splice is under way on the loop, an emptied pipe waits in the pool and
    /// the next splice takes it; once nothing splices, no pipe is kept.
    func testPipesGoBackToThePoolAndAreReused() throws {
        let (p, other) = try pairBesideAnotherSplice()
        defer {
            p.close()
            other.close()
        }
        for round in 1...3 {
            var moved = 0
            XCTAssertTrue(p.src.startSplice(to: p.dst, budget: 1000) { moved += $0 })
            XCTAssertEqual(Self.writeSome(p.feed, [UInt8](repeating: UInt8(round), count: 1000), from: 0), 1000)
            for _ in 0..<1000 where moved < 1000 { _ = p.loop.runOnce(blocking: false) }
            XCTAssertEqual(moved, 1000)
            XCTAssertEqual(p.src.spliceBudget, 0)
            p.src.stopSplice()
            _ = p.loop.runOnce(blocking: false)
            XCTAssertEqual(LocalSocket.readAvailable(p.drain), [UInt8](repeating: UInt8(round), count: 1000))
            XCTAssertNil(p.dst.spliceIn, "an empty pipe nothing splices into leaves the destination")
            XCTAssertEqual(p.loop.pipes.spareCount, 1)
        }
        XCTAssertEqual(p.loop.pipes.pipesMade, 2, "one pipe served every round (and one the other splice)")
        other.src.stopSplice()
        XCTAssertEqual(p.loop.pipes.inUse, 0)
        XCTAssertEqual(p.loop.pipes.spareCount, 0, "nothing splices: no pipe kept")
    }

    /// Spares kept while a long splice goes on close once none was taken for `idleTrim`.
    func testSparePipesCloseWhenIdle() throws {
        let (p, other) = try pairBesideAnotherSplice()
        defer {
            p.close()
            other.close()
        }
        var moved = 0
        XCTAssertTrue(p.src.startSplice(to: p.dst, budget: 10) { moved += $0 })
        XCTAssertEqual(Self.writeSome(p.feed, [UInt8](repeating: 1, count: 10), from: 0), 10)
        for _ in 0..<1000 where moved < 10 { _ = p.loop.runOnce(blocking: false) }
        p.src.stopSplice()
        XCTAssertEqual(p.loop.pipes.spareCount, 1)
        let started = Date()
        for _ in 0..<50 where p.loop.pipes.spareCount > 0 {
            usleep(100_000)
            _ = p.loop.runOnce(blocking: false)
        }
        XCTAssertEqual(p.loop.pipes.spareCount, 0, "the spare pipe closed")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.9, "not before a second passed")
        XCTAssertEqual(p.loop.pipes.inUse, 1, "the other splice keeps its pipe")
    }

    func testBufferedInputOrTheSameStreamRefuseToSplice() throws {
        let p = try pair()
        defer { p.close() }
        let recorder = Recorder()
        p.src.delegate = recorder
        XCTAssertEqual(Self.writeSome(p.feed, Array("buffered".utf8), from: 0), 8)
        for _ in 0..<100 where recorder.readable == 0 { _ = p.loop.runOnce(blocking: false) }
        XCTAssertEqual(p.src.inputLength, 8)
        XCTAssertFalse(p.src.startSplice(to: p.dst, budget: 100) { _ in }, "input read already goes first")
        XCTAssertFalse(p.src.isSplicing)
        XCTAssertFalse(p.src.startSplice(to: p.src, budget: 100) { _ in })
    }

    // MARK: helpers

    /// Writes what the socket takes now of `bytes[from...]`; returns how many.
    private static func writeSome(_ fd: Int32, _ bytes: [UInt8], from: Int) -> Int {
        guard from < bytes.count else { return 0 }
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + from, bytes.count - from, Int32(MSG_NOSIGNAL)) }
        return max(n, 0)
    }
}
