import AirlockSerialization
import Foundation
import XCTest

func checkPlist(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBytes { PropertyListValidation.check($0) } }
func checkPlist(_ text: String) -> String? { checkPlist(Array(text.utf8)) }

/// Real property lists from Python's `plistlib`: `object` is a Python expression
/// (`datetime` is imported), `format` is `BINARY` or `XML`.
func pythonPlist(_ object: String, format: String = "BINARY", file: StaticString = #filePath, line: UInt = #line)
    throws -> [UInt8]
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
        "python3", "-c",
        "import plistlib, sys, datetime; sys.stdout.buffer.write(plistlib.dumps(\(object), fmt=plistlib.FMT_\(format)))",
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    XCTAssertEqual(process.terminationStatus, 0, "python3 plistlib.dumps(\(object))", file: file, line: line)
    return Array(data)
}

/// A binary property list built by hand: `objects` laid out after the header in order,
/// one-byte offsets and references unless told otherwise.
func handBuiltBinaryPlist(_ objects: [[UInt8]], top: UInt64 = 0, objectRefSize: UInt8 = 1) -> [UInt8] {
    var bytes = Array("bplist00".utf8)
    var offsets: [Int] = []
    for object in objects {
        offsets.append(bytes.count)
        bytes += object
    }
    let tableStart = bytes.count
    let offsetIntSize = offsets.max().map { $0 > 0xFF ? 2 : 1 } ?? 1
    for offset in offsets {
        if offsetIntSize == 2 { bytes.append(UInt8(offset >> 8)) }
        bytes.append(UInt8(offset & 0xFF))
    }
    bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetIntSize), objectRefSize]
    bytes += bigEndian(UInt64(objects.count)) + bigEndian(top) + bigEndian(UInt64(tableStart))
    return bytes
}

func bigEndian(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
}

/// A binary property list's 32-byte trailer, to read and corrupt in place.
struct BinaryPlistTrailer {
    var bytes: [UInt8]
    var start: Int { bytes.count - 32 }

    var offsetIntSize: UInt8 {
        get { bytes[start + 6] }
        set { bytes[start + 6] = newValue }
    }
    var objectRefSize: UInt8 {
        get { bytes[start + 7] }
        set { bytes[start + 7] = newValue }
    }
    var objectCount: UInt64 {
        get { field(8) }
        set { setField(8, newValue) }
    }
    var topObject: UInt64 {
        get { field(16) }
        set { setField(16, newValue) }
    }
    var offsetTableStart: UInt64 {
        get { field(24) }
        set { setField(24, newValue) }
    }

    /// The offset of object `index`, from the offset table.
    func offset(of index: Int) -> Int {
        let size = Int(offsetIntSize)
        let at = Int(offsetTableStart) + index * size
        return bytes[at..<(at + size)].reduce(0) { $0 << 8 | Int($1) }
    }

    private func field(_ at: Int) -> UInt64 {
        bytes[(start + at)..<(start + at + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private mutating func setField(_ at: Int, _ value: UInt64) {
        bytes.replaceSubrange((start + at)..<(start + at + 8), with: bigEndian(value))
    }
}
