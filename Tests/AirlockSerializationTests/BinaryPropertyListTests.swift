import AirlockSerialization
import XCTest

/// Binary property lists: real ones from Python's plistlib, the same corrupted, and hand-built graphs.
final class BinaryPropertyListTests: XCTestCase {
    static let sample = """
        {'name': 'airlock', 'n': 42, 'big': 2**64 - 1, 'neg': -5, 'pi': 3.14, 'ok': True, 'no': False,
         'list': [1, 'two', 'drei', 'ü€', [], {}], 'blob': b'\\x00\\x01' * 100,
         'when': datetime.datetime(2024, 1, 2, 3, 4, 5), 'nested': {'deep': [[['x' * 300]]]}, 'uid': plistlib.UID(7)}
        """

    private func assertValid(_ bytes: [UInt8], _ note: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(bytes.starts(with: Array("bplist00".utf8)), "not a binary plist \(note)", file: file, line: line)
        XCTAssertNil(checkPlist(bytes), "\(note) should be valid", file: file, line: line)
    }

    private func assertInvalid(
        _ bytes: [UInt8], _ fragment: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let error = checkPlist(bytes) else {
            XCTFail("should be rejected for \(fragment)", file: file, line: line)
            return
        }
        XCTAssertTrue(error.hasPrefix("binary: "), error, file: file, line: line)
        XCTAssertTrue(error.contains(fragment), "\(error) should mention \(fragment)", file: file, line: line)
    }

    private func sample() throws -> BinaryPlistTrailer {
        BinaryPlistTrailer(bytes: try pythonPlist(Self.sample))
    }

    // MARK: Valid

    func testPlistlibOutputIsValid() throws {
        assertValid(try pythonPlist(Self.sample), "the sample dict")
        assertValid(try pythonPlist("7"), "a top-level integer")
        assertValid(try pythonPlist("'just a string'"), "a top-level string")
        assertValid(try pythonPlist("[]"), "an empty array")
    }

    /// Over 255 objects needs two-byte references, over 64 KiB of objects wider offsets.
    func testWideReferencesAndOffsets() throws {
        let many = BinaryPlistTrailer(bytes: try pythonPlist("[str(i) * 3 for i in range(70000)]"))
        XCTAssertGreaterThanOrEqual(many.objectRefSize, 4)
        XCTAssertGreaterThanOrEqual(many.offsetIntSize, 3)
        assertValid(many.bytes, "70,000 strings")
        let some = BinaryPlistTrailer(bytes: try pythonPlist("list(range(1000, 1400))"))
        XCTAssertEqual(some.objectRefSize, 2)
        assertValid(some.bytes, "400 integers")
    }

    func testSharedObjectsAreNotCycles() {
        // [s, s] where s is one string object.
        let shared = handBuiltBinaryPlist([[0xA2, 1, 1], [0x51, UInt8(ascii: "s")]])
        assertValid(shared, "an array naming the same string twice")
    }

    // MARK: Trailer

    func testTruncatedTrailer() throws {
        let bytes = try pythonPlist(Self.sample)
        assertInvalid(Array(bytes.dropLast()), "offset integer size 0")
        assertInvalid(Array(bytes.prefix(39)), "39 bytes cannot hold the 8-byte header and the 32-byte trailer")
        assertInvalid(Array("bplist00".utf8), "cannot hold")
    }

    func testBadOffsetAndReferenceSizes() throws {
        for size: UInt8 in [0, 9, 0xFF] {
            var t = try sample()
            t.offsetIntSize = size
            assertInvalid(t.bytes, "offset integer size \(size) in the trailer is not within 1...8")
            t = try sample()
            t.objectRefSize = size
            assertInvalid(t.bytes, "object reference size \(size) in the trailer is not within 1...8")
        }
        // As CoreFoundation: n-byte references can name fewer than 2^(8n) objects.
        assertValid(handBuiltBinaryPlist([[0x08]] + Array(repeating: [0x09], count: 254)), "255 objects")
        assertInvalid(handBuiltBinaryPlist([[0x08]] + Array(repeating: [0x09], count: 255)),
                      "object reference size 1 cannot name 256 objects")
    }

    func testObjectCountAndTopObject() throws {
        var t = try sample()
        let count = t.objectCount
        t.topObject = count
        assertInvalid(t.bytes, "top object \(count) is not below the object count \(count)")
        t.topObject = .max
        assertInvalid(t.bytes, "top object")
        t = try sample()
        t.objectCount = 0
        assertInvalid(t.bytes, "the trailer counts no objects")
        t = try sample()
        t.objectCount = .max
        assertInvalid(t.bytes, "does not end before the trailer")
        t = try sample()
        t.objectCount += 1
        assertInvalid(t.bytes, "does not end before the trailer")
    }

    func testOffsetTableOutOfRange() throws {
        var t = try sample()
        t.offsetTableStart = UInt64(t.bytes.count)
        assertInvalid(t.bytes, "does not end before the trailer")
        t.offsetTableStart = .max
        assertInvalid(t.bytes, "does not end before the trailer")
        t.offsetTableStart = 4
        assertInvalid(t.bytes, "offset table at byte 4 leaves no room for objects after the header")
        t.offsetTableStart = 8
        assertInvalid(t.bytes, "leaves no room")
    }

    func testOffsetsOutsideTheObjectArea() throws {
        let t = try sample()
        for bad in [0, 7, Int(t.offsetTableStart), 0xFFFF] where bad < 1 << (8 * Int(t.offsetIntSize)) {
            var broken = t
            let at = Int(t.offsetTableStart) + 3 * Int(t.offsetIntSize)
            for k in 0..<Int(t.offsetIntSize) {
                broken.bytes[at + k] = UInt8(truncatingIfNeeded: bad >> (8 * (Int(t.offsetIntSize) - 1 - k)))
            }
            assertInvalid(broken.bytes, "object 3's offset \(bad) is outside the object area")
        }
    }

    // MARK: Objects

    func testUnknownMarkerOnTheTopObject() throws {
        var t = try sample()
        let top = t.offset(of: Int(t.topObject))
        for marker: UInt8 in [0x70, 0x90, 0xB1, 0xE0, 0xF0, 0x01, 0x15, 0x21, 0x34] {
            t.bytes[top] = marker
            assertInvalid(t.bytes, "at byte \(top))")
        }
    }

    func testReferenceBeyondTheObjectCount() throws {
        var t = BinaryPlistTrailer(bytes: try pythonPlist("[1, 2, 3]"))
        let top = t.offset(of: Int(t.topObject))
        XCTAssertEqual(t.bytes[top], 0xA3)
        t.bytes[top + 2] = 0xFE
        assertInvalid(t.bytes, "refers to object 254, beyond the object count 4")
    }

    func testObjectRunningIntoTheOffsetTable() throws {
        var t = BinaryPlistTrailer(bytes: try pythonPlist("'x' * 40"))
        let top = t.offset(of: 0)
        XCTAssertEqual(t.bytes[top], 0x5F, "a long ASCII string: length in a following integer")
        t.bytes[top + 2] = 41
        assertInvalid(t.bytes, "runs into the offset table")
        assertInvalid(handBuiltBinaryPlist([[0x5F, 0x13, 0xFF, 0xFF, 0xFF, 0xFF]]), "runs into the offset table")
        assertInvalid(handBuiltBinaryPlist([[0x4F, 0x13]]), "has a length that runs into the offset table")
        assertInvalid(handBuiltBinaryPlist([[0x6F, 0x20, 0x01]]), "has a malformed length")
        assertInvalid(handBuiltBinaryPlist([[0x13, 0, 0]]), "runs into the offset table")
        assertInvalid(handBuiltBinaryPlist([[0xAF, 0x13] + bigEndian(.max)]), "runs into the offset table")
        assertInvalid(handBuiltBinaryPlist([[0xDF, 0x13] + bigEndian(.max / 2 + 1)]), "has a length that overflows")
    }

    func testCyclesAndDictionaryKeys() {
        assertInvalid(handBuiltBinaryPlist([[0xA1, 0]]), "object 0 contains itself")
        assertInvalid(handBuiltBinaryPlist([[0xA1, 1], [0xA1, 0]]), "object 0 contains itself")
        assertInvalid(handBuiltBinaryPlist([[0xD1, 1, 1], [0x10, 5]]), "has a key (object 1) that is not a string")
        assertValid(handBuiltBinaryPlist([[0xD1, 1, 2], [0x51, UInt8(ascii: "k")], [0x09]]), "{k: true}")
        assertValid(handBuiltBinaryPlist([[0xD1, 1, 2], [0x61, 0x00, 0xFC], [0x09]]), "{ü: true} in UTF-16")
    }

    func testUnsupportedVersion() throws {
        var bytes = try pythonPlist("[1]")
        bytes[7] = UInt8(ascii: "1")
        assertInvalid(bytes, "unsupported version '01' (expected bplist00)")
    }
}
