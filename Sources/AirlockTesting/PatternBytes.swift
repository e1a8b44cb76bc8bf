/// The deterministic bytes `.pattern(count:)` serves: byte `i` of the whole stream depends only on `i`
/// and does not repeat with any power-of-two period, so a dropped, repeated or reordered 64 KiB block
/// changes the bytes, not just the length. `offset` is the stream position of the first byte returned.
public func patternBytes(count: Int, offset: Int = 0) -> [UInt8] {
    guard count > 0 else { return [] }
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for i in 0..<count {
            buffer[i] = patternByte(at: offset + i)
        }
        initialized = count
    }
}

@inline(__always)
func patternByte(at position: Int) -> UInt8 {
    let z = UInt64(truncatingIfNeeded: position) &* 0x9E37_79B9_7F4A_7C15
    return UInt8(truncatingIfNeeded: (z >> 56) ^ (z >> 29))
}
