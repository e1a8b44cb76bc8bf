@testable import AirlockIO
import CLibevent   // timeval (its shim includes <sys/time.h>)
import Foundation
import Glibc
import XCTest

/// `closeAfterFlush` on real TCP sockets, the loop run (blocking) on the test's thread and the
/// peer read on another: what was queued reaches a slow reader whole, however long past the
/// 2 s linger it takes (within the owner's write timeout), and a peer that stops reading is
/// still closed after the linger without progress.
final class StreamCloseAfterFlushTests: XCTestCase {
    /// What the peer's reader thread saw.
    private final class Peer: @unchecked Sendable {
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        private var ended = false
        var received: [UInt8] { lock.withLock { bytes } }
        var sawEnd: Bool { lock.withLock { ended } }
        func add(_ b: ArraySlice<UInt8>) { lock.withLock { bytes += b } }
        func end() { lock.withLock { ended = true } }
    }

    /// Reads `fd` `chunk` bytes at a time, pausing `pause` seconds after each read, until EOF,
    /// an error or 20 s; `stopAfter` bytes: stops reading (and keeps the socket open).
    private func startReader(_ fd: Int32, chunk: Int, pause: Double, stopAfter: Int = .max) -> Peer {
        let peer = Peer()
        var tv = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        Thread {
            var buf = [UInt8](repeating: 0, count: chunk)
            var total = 0
            while total < stopAfter {
                let n = recv(fd, &buf, chunk, 0)
                if n <= 0 { break }
                total += n
                peer.add(buf[..<n])
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            }
            if total < stopAfter { peer.end() }
        }.start()
        return peer
    }

    /// Runs `loop` (an iteration, then a millisecond's pause) until `done` or `seconds` passed.
    private func run(_ loop: EventLoop, seconds: Double, until done: () -> Bool) {
        let deadline = EventLoop.nowNanos() + UInt64(seconds * 1e9)
        while !done() && EventLoop.nowNanos() < deadline {
            _ = loop.runOnce(blocking: false)
            usleep(1_000)
        }
    }

    private func smallBuffers(_ ours: Int32, _ theirs: Int32) {
        var size: Int32 = 16 * 1024
        setsockopt(ours, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(theirs, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// 400 KB queued, then closeAfterFlush: a reader taking ~4 s (16 KB every 150 ms, through
    /// 16 KB socket buffers) gets every byte, in order, then the end. It was cut off at 2 s.
    func testASlowReaderGetsTheWholeAnswerPastTheLinger() throws {
        let loop = EventLoop(name: "flush")
        let (ours, theirs) = try LocalSocket.tcpPair()
        defer { close(theirs) }
        smallBuffers(ours, theirs)
        let s = AirlockIO.Stream(loop: loop, fd: ours)
        s.setTimeouts(read: .seconds(30), write: .seconds(30))   // as a client connection's
        let body = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        s.write(body)
        var flushed = false
        s.closeAfterFlush { flushed = true }
        let peer = startReader(theirs, chunk: 16 * 1024, pause: 0.15)
        let start = EventLoop.nowNanos()
        run(loop, seconds: 20) { peer.sawEnd }
        XCTAssertGreaterThan(EventLoop.nowNanos() - start, 2_500_000_000, "the reader was slow enough to outlast the linger")
        XCTAssertEqual(peer.received.count, body.count)
        XCTAssertTrue(peer.received == body, "every byte, in order")
        XCTAssertTrue(peer.sawEnd, "then the end of the stream")
        XCTAssertTrue(flushed)
    }

    /// A peer that reads a little and then stops: the stream is closed about `linger` after
    /// its last progress, not kept for the owner's whole write timeout.
    func testAPeerThatStopsReadingIsClosedAfterTheLinger() throws {
        let loop = EventLoop(name: "flush")
        let (ours, theirs) = try LocalSocket.tcpPair()
        defer { close(theirs) }
        smallBuffers(ours, theirs)
        let s = AirlockIO.Stream(loop: loop, fd: ours)
        s.setTimeouts(read: .seconds(30), write: .seconds(30))
        s.write([UInt8](repeating: 7, count: 400_000))
        var flushed = false
        s.closeAfterFlush { flushed = true }
        let peer = startReader(theirs, chunk: 16 * 1024, pause: 0, stopAfter: 64 * 1024)
        let start = EventLoop.nowNanos()
        run(loop, seconds: 20) { s.state == .closed }
        let took = Double(EventLoop.nowNanos() - start) / 1e9
        XCTAssertEqual(s.state, .closed)
        XCTAssertLessThan(took, 10, "closed after the linger without progress, not the 30 s write timeout")
        XCTAssertGreaterThanOrEqual(peer.received.count, 64 * 1024)
        XCTAssertLessThan(peer.received.count, 400_000)
        XCTAssertTrue(flushed, "onFlushed runs when the stream closes first")
    }
}
