@testable import AirlockWire
import XCTest

/// The byte classes and the word-at-a-time scans, checked against plain definitions over every
/// byte value and over seeded random buffers at every alignment.
final class ByteClassTests: XCTestCase {
    /// RFC 9110 5.6.2, spelled out.
    private static let tchars = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))

    func testTcharMatchesTheRFCForEveryByte() {
        for b in 0...255 {
            XCTAssertEqual(ByteClass.isTchar(UInt8(b)), Self.tchars.contains(UInt8(b)), "byte \(b)")
        }
    }

    func testFieldValueBytesForEveryByte() {
        for b in 0...255 {
            let expected = b == 0x09 || (b >= 0x20 && b != 0x7F)
            XCTAssertEqual(ByteClass.isFieldValueByte(UInt8(b)), expected, "byte \(b)")
        }
    }

    /// xorshift64*: deterministic, so a failure is reproducible.
    private struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    func testWordTestsAgreeWithBytewiseTests() {
        var rng = Seeded(state: 0x9E37_79B9_7F4A_7C15)
        let interesting: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0xFF]
        for _ in 0..<20_000 {
            var bytes = (0..<8).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
            // Plant a few interesting bytes in most words.
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                bytes[Int.random(in: 0..<8, using: &rng)] = interesting.randomElement(using: &rng)!
            }
            let w = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            for n: UInt8 in [0x0A, 0x20, 0x80] {
                XCTAssertEqual(ByteClass.anyByteBelow(w, n), bytes.contains { $0 < n }, "\(bytes) below \(n)")
            }
            for b in interesting {
                XCTAssertEqual(ByteClass.anyByteEqual(w, b), bytes.contains(b), "\(bytes) equal \(b)")
            }
        }
    }

    func testScansAgreeWithPlainLoopsAtEveryOffset() {
        var rng = Seeded(state: 42)
        let rare: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F, 0x80, 0xFF]
        for _ in 0..<2_000 {
            let n = Int.random(in: 0...40, using: &rng)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }
            for _ in 0..<Int.random(in: 0...2, using: &rng) where n > 0 {
                bytes[Int.random(in: 0..<n, using: &rng)] = rare.randomElement(using: &rng)!
            }
            bytes.withUnsafeBytes { buf in
                for start in 0...n {
                    let firstLF = (start..<n).first { bytes[$0] == 0x0A } ?? n
                    XCTAssertEqual(ByteClass.index(of: 0x0A, in: buf, from: start, to: n), firstLF, "\(bytes) from \(start)")
                    let end = Int.random(in: start...n, using: &rng)
                    let firstLFBefore = (start..<end).first { bytes[$0] == 0x0A } ?? end
                    XCTAssertEqual(ByteClass.index(of: 0x0A, in: buf, from: start, to: end), firstLFBefore)
                    let firstBad = (start..<n).first { !ByteClass.isFieldValueByte(bytes[$0]) } ?? n
                    XCTAssertEqual(ByteClass.firstNonFieldValueByte(buf, from: start), firstBad, "\(bytes) from \(start)")
                }
                XCTAssertEqual(ByteClass.allFieldValueBytes(buf), bytes.allSatisfy(ByteClass.isFieldValueByte))
                XCTAssertEqual(ByteClass.allTchar(buf), bytes.allSatisfy { Self.tchars.contains($0) })
            }
        }
    }
}
