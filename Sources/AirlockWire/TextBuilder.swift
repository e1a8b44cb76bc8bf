/// Text written straight into memory the caller provides and sized: a new `String`'s own
/// storage (`string`), a stack buffer (`withBytes`), or any buffer (`init`). Swift's
/// `String +=` costs a few hundred instructions a part (uniqueness, capacity and UTF-8
/// checks), and `Array.append(contentsOf:)` about 90; here a part is a bounds check and a copy.
/// A cache key's URL and `Cache-Status` (the cache's miss path) and each access record are
/// built this way. Writing past the capacity traps: callers size the memory for the most
/// their text can take.
public struct TextBuilder {
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let capacity: Int
    @usableFromInline var used = 0

    /// Writes into `buffer` (its first byte on).
    @inlinable
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// Bytes written so far.
    @inlinable public var count: Int { used }

    /// What was written.
    @inlinable public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: used) }

    /// A `String` of at most `capacity` bytes of UTF-8, as `build` writes it (one allocation).
    @inlinable
    public static func string(capacity: Int, _ build: (inout TextBuilder) -> Void) -> String {
        String(unsafeUninitializedCapacity: max(1, capacity)) { buffer in
            var out = TextBuilder(UnsafeMutableRawBufferPointer(buffer))
            build(&out)
            return out.used
        }
    }

    /// `body` over the bytes `build` writes (at most `capacity`), held on the stack.
    @inlinable
    public static func withBytes<R>(capacity: Int, _ build: (inout TextBuilder) -> Void,
                                    _ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeTemporaryAllocation(byteCount: max(1, capacity), alignment: 1) { buffer in
            var out = TextBuilder(buffer)
            build(&out)
            return body(out.written)
        }
    }

    /// The next `n` bytes' memory, counted as written.
    @inlinable @inline(__always)
    mutating func room(_ n: Int) -> UnsafeMutableRawPointer {
        precondition(n <= capacity - used, "TextBuilder: more text than its capacity")
        defer { used += n }
        return base + used
    }

    @inlinable
    mutating func append(_ p: UnsafeRawPointer, _ n: Int) {
        room(n).copyMemory(from: p, byteCount: n)
    }

    @inlinable
    public mutating func append(byte: UInt8) {
        room(1).storeBytes(of: byte, as: UInt8.self)
    }

    @inlinable
    public mutating func append(_ text: StaticString) {
        append(text.utf8Start, text.utf8CodeUnitCount)
    }

    /// A String's UTF-8 (labelled, so that a literal is always the `StaticString` one, written
    /// without a String).
    @inlinable
    public mutating func append(string text: String) {
        // Borrowed, not copied (`withUTF8` is mutating: a copy cost a retain and a release):
        // contiguous for native and small strings alike; a bridged one byte by byte.
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { u in
            if let p = u.baseAddress { append(UnsafeRawPointer(p), u.count) }
        }
        if done == nil { for byte in text.utf8 { append(byte: byte) } }
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if let p = bytes.baseAddress { append(p, bytes.count) }
    }

    @inlinable
    public mutating func append(bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Up to `max` bytes `write` puts at the memory it is given, returning how many it wrote.
    @inlinable
    public mutating func append(upTo max: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        precondition(max <= capacity - used, "TextBuilder: more text than its capacity")
        let n = write((base + used).assumingMemoryBound(to: UInt8.self))
        precondition(n <= max)
        used += n
    }

    /// Bytes `n` in decimal takes (a minus sign included).
    @inlinable
    public static func decimalCount(_ n: some BinaryInteger) -> Int {
        var v = UInt64(n.magnitude)
        var digits = 1
        while v >= 10 { v /= 10; digits += 1 }
        return n < 0 ? digits + 1 : digits
    }

    /// `n` in decimal, as `String(n)` writes it: its digits written straight into the buffer.
    @inlinable
    public mutating func append(decimal n: some BinaryInteger) {
        let total = Self.decimalCount(n)
        let p = room(total)
        var v = UInt64(n.magnitude)
        var end = total
        repeat {
            end -= 1
            p.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 + v % 10), toByteOffset: end, as: UInt8.self)
            v /= 10
        } while v > 0
        if n < 0 { p.storeBytes(of: 0x2D, as: UInt8.self) }
    }

    /// Lowercase hexadecimal, as `String(value, radix: 16)` writes it.
    @inlinable
    public mutating func append(hex value: UInt64) {
        var shift = 60
        while shift > 0 && (value >> UInt64(shift)) == 0 { shift -= 4 }
        while shift >= 0 {
            let digit = UInt8(truncatingIfNeeded: (value >> UInt64(shift)) & 0xF)
            append(byte: digit < 10 ? UInt8(ascii: "0") &+ digit : UInt8(ascii: "a") &+ digit &- 10)
            shift -= 4
        }
    }

    /// `number` as a JSON number, as `Double.description` writes it (quoted, and so a JSON
    /// string, when it is not finite), without a String when it is a whole number of thousandths
    /// below a billion (a duration in milliseconds rounded to microseconds): 13 bytes at most
    /// then, 26 otherwise.
    @inlinable
    public mutating func append(thousandths number: Double) {
        let scaled = (number * 1000).rounded()
        guard number.sign == .plus, scaled < 1e12, scaled / 1000 == number else {
            if number.isFinite { return append(string: number.description) }
            return append(jsonQuoted: number.description, style: .log)
        }
        let thousandths = UInt64(scaled)
        append(decimal: thousandths / 1000)
        append(byte: UInt8(ascii: "."))
        var fraction = thousandths % 1000
        if fraction == 0 { return append(byte: UInt8(ascii: "0")) }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let p = room(digits)
        for i in stride(from: digits - 1, through: 0, by: -1) {
            p.storeBytes(of: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction % 10), toByteOffset: i, as: UInt8.self)
            fraction /= 10
        }
    }

    /// `text` escaped as `JSONString.appendEscaped` escapes it, without the quotes: a string
    /// with nothing that may need escaping is copied whole, any other goes through it.
    @inlinable
    public mutating func append(jsonEscaped text: String, style: JSONString.Style) {
        let plain: Bool? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            for b in utf8 where b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F || b == 0xE2 { return false }
            if let p = utf8.baseAddress { append(p, utf8.count) }
            return true
        }
        if plain == true { return }
        var escaped: [UInt8] = []
        JSONString.appendEscaped(text, to: &escaped, style: style)
        append(bytes: escaped)
    }

    /// `"text"`, escaped as `append(jsonEscaped:style:)` escapes it.
    @inlinable
    public mutating func append(jsonQuoted text: String, style: JSONString.Style) {
        append(byte: UInt8(ascii: "\""))
        append(jsonEscaped: text, style: style)
        append(byte: UInt8(ascii: "\""))
    }

    /// The most bytes `append(jsonEscaped:style:)` writes for `text`: six for a byte (`\u00XX`).
    @inlinable
    public static func jsonEscapedBound(_ text: String) -> Int { text.utf8.count * 6 }
}
