/// Recognises the image formats AFNetworking's image serializer decodes, by their leading bytes.
public enum ImageSignature {
    private static let signatures: [[UInt8]] = [
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],  // PNG
        [0xFF, 0xD8, 0xFF],  // JPEG (SOI + the next marker's prefix)
        Array("GIF87a".utf8),
        Array("GIF89a".utf8),
        [0x49, 0x49, 0x2A, 0x00],  // TIFF, little-endian "II*\0"
        [0x4D, 0x4D, 0x00, 0x2A],  // TIFF, big-endian "MM\0*"
        [0x42, 0x4D],  // BMP "BM"
        [0x00, 0x00, 0x01, 0x00],  // ICO
    ]

    /// True when `bytes` starts with the signature of a PNG, JPEG, GIF87a/89a, TIFF, BMP or ICO file.
    public static func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        signatures.contains { signature in
            bytes.count >= signature.count && zip(signature, bytes).allSatisfy { $0 == $1 }
        }
    }
}
