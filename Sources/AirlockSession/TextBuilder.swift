/// Short text (a cache key's URL, a `Cache-Status` value) written straight into memory the
/// caller provides: a new `String`'s own storage (`TextBuilder.string`) or a stack buffer
/// (`TextBuilder.withBytes`). Swift's `String +=` costs a few hundred instructions per part
/// (uniqueness, capacity and UTF-8 checks), and building in an array first costs an
/// allocation and a validating copy; the cache's miss path paid both on every request.
struct TextBuilder {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private(set) var count = 0

    private init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// A `String` of at most `capacity` bytes of UTF-8, as `build` writes it (one allocation).
    static func string(capacity: Int, _ build: (inout TextBuilder) -> Void) -> String {
        String(unsafeUninitializedCapacity: max(1, capacity)) { buffer in
            var out = TextBuilder(UnsafeMutableRawBufferPointer(buffer))
            build(&out)
            return out.count
        }
    }

    /// `body` over the bytes `build` writes (at most `capacity`), held on the stack.
    static func withBytes<R>(capacity: Int, _ build: (inout TextBuilder) -> Void, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: max(1, capacity), alignment: 1) { buffer in
            var out = TextBuilder(buffer)
            build(&out)
            return body(UnsafeRawBufferPointer(start: out.base, count: out.count))
        }
    }

    private mutating func append(_ p: UnsafeRawPointer, _ n: Int) {
        precondition(n <= capacity - count, "TextBuilder: more text than its capacity")
        (base + count).copyMemory(from: p, byteCount: n)
        count += n
    }

    /// A String's UTF-8 (labelled, so that a literal is always the `StaticString` one, written
    /// without a String).
    mutating func append(string text: String) {
        var text = text   // withUTF8: in place for a native string, copied to the stack for a small one
        text.withUTF8 { u in if let p = u.baseAddress { append(p, u.count) } }
    }

    mutating func append(_ text: StaticString) {
        append(text.utf8Start, text.utf8CodeUnitCount)
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if let p = bytes.baseAddress { append(p, bytes.count) }
    }

    /// Bytes `n` in decimal takes (a minus sign included).
    static func decimalCount(_ n: some BinaryInteger) -> Int {
        var v = UInt64(n.magnitude)
        var digits = 1
        while v >= 10 { v /= 10; digits += 1 }
        return n < 0 ? digits + 1 : digits
    }

    /// `n` in decimal, its digits written straight into the buffer, most significant first.
    mutating func append(decimal n: some BinaryInteger) {
        let total = Self.decimalCount(n)
        precondition(total <= capacity - count, "TextBuilder: more text than its capacity")
        var v = UInt64(n.magnitude)
        var end = count + total
        repeat {
            end -= 1
            base.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 + v % 10), toByteOffset: end, as: UInt8.self)
            v /= 10
        } while v > 0
        if n < 0 { base.storeBytes(of: 0x2D, toByteOffset: count, as: UInt8.self) }
        count += total
    }
}
