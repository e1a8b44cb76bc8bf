import AirlockSerialization
import XCTest

/// Leading-byte signatures of the formats AFNetworking's image serializer decodes.
final class ImageSignatureTests: XCTestCase {
    private func matches(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { ImageSignature.matches($0) } }

    func testSupportedSignatures() {
        let samples: [(String, [UInt8])] = [
            ("PNG", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D]),
            ("JPEG", [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]),
            ("GIF87a", bytes("GIF87a") + [0x01, 0x00]),
            ("GIF89a", bytes("GIF89a") + [0x01, 0x00]),
            ("TIFF little-endian", [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00]),
            ("TIFF big-endian", [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x08]),
            ("BMP", bytes("BM") + [0x36, 0x00]),
            ("ICO", [0x00, 0x00, 0x01, 0x00, 0x01, 0x00]),
        ]
        for (name, sample) in samples {
            XCTAssertTrue(matches(sample), name)
        }
    }

    func testExactSignatureLengthIsEnough() {
        XCTAssertTrue(matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        XCTAssertTrue(matches(bytes("BM")))
    }

    func testNonImagesAndNearMisses() {
        let samples: [(String, [UInt8])] = [
            ("empty", []),
            ("truncated PNG", [0x89, 0x50, 0x4E, 0x47]),
            ("PNG with a corrupted byte", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0B]),
            ("JPEG SOI alone", [0xFF, 0xD8]),
            ("GIF88a", bytes("GIF88a")),
            ("TIFF with a mixed byte order", [0x49, 0x49, 0x00, 0x2A]),
            ("CUR (cursor, type 2)", [0x00, 0x00, 0x02, 0x00]),
            ("lone B", bytes("B")),
            ("WebP", bytes("RIFF") + [0, 0, 0, 0] + bytes("WEBP")),
            ("HTML", bytes("<!doctype html>")),
            ("JSON", bytes("{}")),
        ]
        for (name, sample) in samples {
            XCTAssertFalse(matches(sample), name)
        }
    }
}
