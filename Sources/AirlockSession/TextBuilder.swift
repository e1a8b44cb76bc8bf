/// Short text (a cache key's URL, a `Cache-Status` value) built in one byte buffer and made a
/// `String` once: Swift's `String +=` costs a few hundred instructions per part (uniqueness,
/// capacity and UTF-8 checks), which the cache's miss path paid a dozen times per request.
struct TextBuilder {
    private var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `n` in decimal, its digits written straight into the buffer, most significant first.
    mutating func append(decimal n: some BinaryInteger) {
        if n < 0 { bytes.append(0x2D) }
        let v = UInt64(n.magnitude)
        var unit: UInt64 = 1
        while unit <= v / 10 { unit *= 10 }
        repeat {
            bytes.append(UInt8(truncatingIfNeeded: 0x30 + (v / unit) % 10))
            unit /= 10
        } while unit > 0
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { bytes.withUnsafeBytes(body) }
}
