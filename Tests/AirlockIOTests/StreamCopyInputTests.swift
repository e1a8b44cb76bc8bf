@testable import AirlockIO
import CLibevent
import Glibc
import XCTest

/// `Stream.copyInput`: the response cache's copy of a body it relays. It appends the first n
/// input bytes, whichever way they are held (staged in the loop's scratch, or in input chains,
/// however many), and leaves the input as it was.
final class StreamCopyInputTests: XCTestCase {
    private func stream() throws -> (AirlockIO.Stream, Int32) {
        let loop = EventLoop(name: "copy")
        let (ours, theirs) = try LocalSocket.pair()
        return (AirlockIO.Stream(loop: loop, fd: ours), theirs)
    }

    private static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 7) }
    }

    /// Input in `pieces.count` chains (each piece added by reference is a chain of its own):
    /// every length, across every chain boundary and past the end, copies the same bytes as a
    /// contiguous read, and the input stays whole.
    private func checkChains(_ pieces: [[UInt8]]) throws {
        let (s, theirs) = try stream()
        defer { s.close(); close(theirs) }
        let all = pieces.flatMap { $0 }
        for piece in pieces {
            piece.withUnsafeBytes { p in _ = evbuffer_add_reference(s.input, p.baseAddress, p.count, nil, nil) }
        }
        var boundaries = [0, 1, all.count - 1, all.count, all.count + 5]
        var at = 0
        for piece in pieces {
            at += piece.count
            boundaries += [at - 1, at, at + 1]
        }
        for n in Set(boundaries) where n >= 0 {
            var copy: [UInt8] = [9, 9]   // appended to, not replaced
            s.copyInput(n, appendingTo: &copy)
            XCTAssertEqual(copy.count, 2 + min(n, all.count), "n \(n)")
            XCTAssertTrue(copy == [9, 9] + all.prefix(n), "n \(n): the same bytes, in order")
            XCTAssertEqual(s.inputLength, all.count, "n \(n): the input is left as it was")
        }
        var whole: [UInt8] = []
        s.withInput(max: all.count) { whole.append(contentsOf: $0) }
        XCTAssertTrue(whole == all)
        withExtendedLifetime(pieces) {}
    }

    func testInputInSeveralChains() throws {
        try checkChains((0..<5).map { Self.pattern(1_000 + $0 * 4_099, seed: $0) })
    }

    func testMoreChainsThanVectors() throws {
        XCTAssertEqual(AirlockIO.Stream.copyIOVecs, 16)
        try checkChains((0..<40).map { Self.pattern(100 + $0, seed: $0) })
    }

    func testOneChain() throws {
        try checkChains([Self.pattern(70_000, seed: 3)])
    }

    /// Bytes staged in the loop's scratch (a small read) are copied from there.
    func testStagedInput() throws {
        let (s, theirs) = try stream()
        defer { s.close(); close(theirs) }
        let bytes = Self.pattern(300, seed: 7)
        bytes.withUnsafeBytes { p in
            s.staged = p
            for n in [0, 1, 100, 300, 400] {
                var copy: [UInt8] = []
                s.copyInput(n, appendingTo: &copy)
                XCTAssertTrue(copy == Array(bytes.prefix(n)), "n \(n)")
                XCTAssertEqual(s.inputLength, 300)
            }
            s.staged = UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }
}
