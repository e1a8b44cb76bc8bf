@testable import AirlockIO
import AirlockTesting
import Foundation
import XCTest

// Foundation (through XCTest) has its own Stream.
private typealias Stream = AirlockIO.Stream

/// A TLS stream's reading under backpressure, against the TLS origin on 127.0.0.1. OpenSSL
/// reads ahead (a 64 KiB buffer: several records), and records it holds fire no socket event:
/// while reading is paused (the input at its high watermark) the stream must not take them,
/// and once reading is armed again it must, even when the socket has nothing more to say.
final class TLSReadBackpressureTests: TLSOriginTestCase {
    /// Keeps the input (the test drains it); records events.
    private final class Holder: AirlockIO.StreamDelegate {
        var events: [StreamEvent] = []
        func streamReadable(_ stream: Stream) {}
        func streamWritable(_ stream: Stream) {}
        func stream(_ stream: Stream, event: StreamEvent) { events.append(event) }
    }

    /// A connected TLS stream whose input stops at 1 byte, with `path` requested (keep-alive)
    /// and the whole response given 0.5 s to reach the socket before the loop reads it.
    private func pausedStream(_ loop: EventLoop, path: String) throws -> (Stream, Holder) {
        let s = try tlsStream(loop)
        let h = Holder()
        s.delegate = h
        run(loop, seconds: 20) { !h.events.isEmpty }
        XCTAssertEqual(h.events, [.connected])
        s.setReadHighWatermark(1)
        s.write(Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        loop.runOnce(blocking: false)   // the request goes out
        usleep(500_000)
        return (s, h)
    }

    func testPausedReadingTakesNoMoreOfWhatOpenSSLReadAhead() throws {
        let loop = EventLoop(name: "test")
        let (s, h) = try pausedStream(loop, path: "/random/262144")
        defer { s.close() }
        // Some iterations: the first read passes the watermark; nothing may follow it.
        let deadline = EventLoop.nowNanos() + 1_000_000_000
        while EventLoop.nowNanos() < deadline { loop.runOnce(blocking: false); usleep(1000) }
        XCTAssertGreaterThan(s.inputLength, 0, "the first read came")
        XCTAssertLessThanOrEqual(s.inputLength, Stream.readChunk,
                                 "one read, not the records OpenSSL holds behind it (\(s.inputLength) bytes)")
        XCTAssertTrue(h.events == [.connected], "\(h.events)")
    }

    func testReadingArmedAgainTakesWhatOpenSSLHoldsWhenTheSocketIsQuiet() throws {
        let loop = EventLoop(name: "test")
        // Three records: all of it in OpenSSL's first read-ahead; the origin then waits for
        // the next request (keep-alive), so the socket has nothing more to signal.
        let size = 40_000
        let (s, h) = try pausedStream(loop, path: "/random/\(size)")
        defer { s.close() }
        var received: [UInt8] = []
        var body: [UInt8]? = nil
        let deadline = EventLoop.nowNanos() + 5_000_000_000
        while body == nil && EventLoop.nowNanos() < deadline {
            loop.runOnce(blocking: false)
            if s.inputLength > 0 {
                received += s.withInput(max: s.inputLength) { Array($0) }
                s.drainInput(s.inputLength)   // reading is armed again here
            }
            if let end = received.indices.first(where: { received[$0...].starts(with: Array("\r\n\r\n".utf8)) }),
               received.count - end - 4 >= size {
                body = Array(received[(end + 4)...])
            }
            usleep(1000)
        }
        let got = try XCTUnwrap(body, "the response stalled after \(received.count) bytes")
        XCTAssertEqual(got.count, size)
        XCTAssertEqual(try sha256Hex(got), origin.sentBodies.first?.sha256, "the body arrived intact")
        XCTAssertTrue(h.events == [.connected], "\(h.events)")
    }
}
