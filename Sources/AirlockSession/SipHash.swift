/// SipHash (Aumasson and Bernstein, 2012) of a byte string under a 128-bit key: SipHash-1-3 by
/// default, the variant Swift's `Hasher` and CPython's `hash` use. `CacheKey` hashes a URL with
/// it once per request, word by word, under a key drawn when the process starts
/// (`processKey`): as unpredictable to a client choosing URLs as `Hasher`'s, for about a third
/// of the instructions `Hasher` spent on a string (it buffers bytes one at a time).
/// `compression` and `finalization` rounds are parameters so the reference SipHash-2-4 test
/// vectors check the same code.
public enum SipHash {
    /// Drawn from the system's random source (`getrandom`) once per process.
    public static let processKey: (UInt64, UInt64) = {
        var g = SystemRandomNumberGenerator()
        return (g.next(), g.next())
    }()

    @inline(__always)
    static func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 &- b)) }

    @inline(__always)
    static func round(_ v0: inout UInt64, _ v1: inout UInt64, _ v2: inout UInt64, _ v3: inout UInt64) {
        v0 &+= v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
        v2 &+= v3; v3 = rotl(v3, 16); v3 ^= v2
        v0 &+= v3; v3 = rotl(v3, 21); v3 ^= v0
        v2 &+= v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    }

    /// The 64-bit SipHash-c-d of `bytes` under `key` (k0, k1: the key's first and last eight
    /// bytes, little-endian).
    public static func hash(_ bytes: UnsafeRawBufferPointer, key: (UInt64, UInt64),
                            compression: Int = 1, finalization: Int = 3) -> UInt64 {
        sip(bytes, key: key, compression: compression, finalization: finalization)
    }

    /// SipHash-1-3 of `bytes` under `key`, its rounds constants so the inlined loops unroll
    /// (`hash(_:key:)` takes them as arguments: the cache key's hash spent ~340 instructions
    /// on a 49-byte URL, looping over one round at a time).
    public static func hash13(_ bytes: UnsafeRawBufferPointer, key: (UInt64, UInt64)) -> UInt64 {
        sip(bytes, key: key, compression: 1, finalization: 3)
    }

    /// SipHash-1-3 of a string's UTF-8 under `key` (the process's by default).
    public static func hash(_ text: String, key: (UInt64, UInt64) = processKey) -> UInt64 {
        if let h = text.utf8.withContiguousStorageIfAvailable({ hash13(UnsafeRawBufferPointer($0), key: key) }) { return h }
        return Array(text.utf8).withUnsafeBytes { hash13($0, key: key) }
    }

    @inline(__always)
    static func sip(_ bytes: UnsafeRawBufferPointer, key: (UInt64, UInt64), compression: Int, finalization: Int) -> UInt64 {
        var v0 = key.0 ^ 0x736f_6d65_7073_6575
        var v1 = key.1 ^ 0x646f_7261_6e64_6f6d
        var v2 = key.0 ^ 0x6c79_6765_6e65_7261
        var v3 = key.1 ^ 0x7465_6462_7974_6573
        let count = bytes.count
        var last = UInt64(truncatingIfNeeded: count) << 56
        if let base = bytes.baseAddress {   // (nil only when empty)
            let whole = count & ~7
            var at = 0
            while at < whole {
                let m = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: at, as: UInt64.self))
                v3 ^= m
                for _ in 0..<compression { round(&v0, &v1, &v2, &v3) }
                v0 ^= m
                at &+= 8
            }
            var shift: UInt64 = 0
            while at < count {
                last |= UInt64(base.load(fromByteOffset: at, as: UInt8.self)) << shift
                shift &+= 8
                at &+= 1
            }
        }
        v3 ^= last
        for _ in 0..<compression { round(&v0, &v1, &v2, &v3) }
        v0 ^= last
        v2 ^= 0xff
        for _ in 0..<finalization { round(&v0, &v1, &v2, &v3) }
        return v0 ^ v1 ^ v2 ^ v3
    }
}
