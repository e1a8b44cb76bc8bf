@testable import AirlockWire
import XCTest

/// `FieldSection.parse` takes a fast path for well-formed field lines. This differential test
/// holds it to the line-by-line rules of `FieldLine` over seeded random field blocks, valid
/// and hostile: the same fields, or the same error code.
final class FieldSectionFastPathTests: XCTestCase {
    private struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    private struct Field: Equatable {
        var name: [UInt8]
        var value: [UInt8]
    }

    private enum Outcome: Equatable {
        case fields([Field])
        case error(WireError.Code)
    }

    /// What the field block should give, line by line, by `FieldLine` alone.
    private func reference(_ block: [UInt8], maxCount: Int) -> Outcome {
        block.withUnsafeBytes { head in
            var fields: [Field] = []
            var start = 0
            do throws(WireError) {
                while true {
                    guard let lf = try FieldLine.lineEnd(head, from: start) else { return .error(.incompleteHead) }
                    let line = UnsafeRawBufferPointer(rebasing: head[start..<(lf - 1)])
                    if line.isEmpty { return lf + 1 == head.count ? .fields(fields) : .error(.incompleteHead) }
                    if fields.count >= maxCount { return .error(.tooManyHeaders) }
                    let parts = try FieldLine.parse(line)
                    fields.append(Field(name: Array(line[..<parts.nameEnd]), value: Array(line[parts.value])))
                    start = lf + 1
                }
            } catch {
                return .error(error.code)
            }
        }
    }

    func testFastPathAgreesWithTheLineRules() {
        var rng = Seeded(state: 0xA11C_0C0A)
        let pieces: [[UInt8]] = [
            Array("X-Name".utf8), Array("host".utf8), Array("Content-Type".utf8), Array(":".utf8),
            Array(": ".utf8), Array("value".utf8), Array("a b\tc".utf8), Array("  ".utf8), Array("\t".utf8),
            Array("\r\n".utf8), Array("\r".utf8), Array("\n".utf8), [0x00], [0x7F], [0x80, 0xFF], [0x01],
            Array("(".utf8), Array("12345678901234567".utf8), Array("é".utf8), Array(" :".utf8),
        ]
        var agreed = 0
        var disagreed = 0   // the first few are reported one by one
        var valid = 0
        for _ in 0..<20_000 {
            var block: [UInt8] = []
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                if Int.random(in: 0..<3, using: &rng) == 0 {
                    // A well-formed line, so that the fast path is taken often.
                    block += Array("X-\(Int.random(in: 0...99, using: &rng)): v\(Int.random(in: 0...999, using: &rng))  \r\n".utf8)
                } else {
                    for _ in 0..<Int.random(in: 1...5, using: &rng) { block += pieces.randomElement(using: &rng)! }
                }
            }
            block += Array("\r\n".utf8)
            let maxCount = Int.random(in: 1...8, using: &rng)
            let expected = reference(block, maxCount: maxCount)
            let got: Outcome = block.withUnsafeBytes { head in
                do throws(WireError) {
                    let section = try FieldSection.parse(head, from: 0, maxCount: maxCount)
                    return .fields((0..<section.headers.count).map { i in
                        section.headers.withFieldBytes(at: i) { Field(name: Array($0), value: Array($1)) }
                    })
                } catch {
                    return .error(error.code)
                }
            }
            if got == expected {
                agreed += 1
            } else {
                disagreed += 1
                if disagreed <= 10 { XCTFail("for \(block): fast path \(got), line rules \(expected)") }
            }
            if case .fields = expected { valid += 1 }
        }
        XCTAssertEqual(agreed, 20_000, "cases where the fast path and the line rules disagree")
        // Both outcomes must be well represented, or the test proves little.
        XCTAssertGreaterThan(valid, 2_000)
        XCTAssertLessThan(valid, 18_000)
    }
}
