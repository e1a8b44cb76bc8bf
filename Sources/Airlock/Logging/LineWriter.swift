import AirlockIO
import AirlockWire
import Glibc

/// One log line written with plain stores into memory the caller sized for it (`AccessRecord`
/// bounds its record), then appended to the line's array once: a record is some 25 pieces,
/// and `Array.append(contentsOf:)` costs about 90 instructions a piece. Writes the bytes
/// `JSONLineEncoder` writes for the same calls.
struct LineWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    @inline(__always)
    private mutating func room(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        precondition(count + n <= capacity, "LineWriter: the record's bound is too small")
        defer { count += n }
        return base + count
    }

    mutating func put(_ byte: UInt8) {
        room(1).pointee = byte
    }

    mutating func put(_ text: StaticString) {
        let n = text.utf8CodeUnitCount
        room(n).update(from: text.utf8Start, count: n)
    }

    mutating func put<C: Collection>(bytes: C) where C.Element == UInt8 {
        let n = bytes.count
        let p = room(n)
        if bytes.withContiguousStorageIfAvailable({ p.update(from: $0.baseAddress!, count: n) }) == nil {
            var i = 0
            for b in bytes {
                p[i] = b
                i += 1
            }
        }
    }

    /// `JSONLineEncoder.appendInteger`.
    mutating func put<T: BinaryInteger>(integer value: T) {
        if value < 0 {
            put(UInt8(ascii: "-"))
            put(decimal: UInt64(value.magnitude))
        } else {
            put(decimal: UInt64(value))
        }
    }

    mutating func put(decimal value: UInt64) {
        var digits = 1
        var v = value
        while v >= 10 {
            v /= 10
            digits += 1
        }
        let p = room(digits)
        v = value
        for i in stride(from: digits - 1, through: 0, by: -1) {
            p[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
            v /= 10
        }
    }

    /// `JSONLineEncoder.appendHex`.
    mutating func put(hex value: UInt64) {
        var shift = 60
        while shift > 0 && (value >> UInt64(shift)) == 0 { shift -= 4 }
        while shift >= 0 {
            let digit = UInt8(truncatingIfNeeded: (value >> UInt64(shift)) & 0xF)
            put(digit < 10 ? UInt8(ascii: "0") &+ digit : UInt8(ascii: "a") &+ digit &- 10)
            shift -= 4
        }
    }

    /// `JSONLineEncoder.appendThousandths`: at most 13 bytes on the fast path, and what
    /// `Double.description` writes (quoted when not finite) otherwise.
    mutating func put(thousandths number: Double) {
        let scaled = (number * 1000).rounded()
        guard number.sign == .plus, scaled < 1e12, scaled / 1000 == number else {
            var e = JSONLineEncoder(appendingTo: [])
            e.appendFloatingPoint(number)
            return put(bytes: e.bytes)
        }
        let thousandths = UInt64(scaled)
        put(decimal: thousandths / 1000)
        put(UInt8(ascii: "."))
        var fraction = thousandths % 1000
        if fraction == 0 { return put(UInt8(ascii: "0")) }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let p = room(digits)
        for i in stride(from: digits - 1, through: 0, by: -1) {
            p[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: fraction % 10)
            fraction /= 10
        }
    }

    /// `JSONLineEncoder.appendStringContents`: a string with nothing to escape is copied
    /// whole; one that has goes through `JSONString.appendEscaped` itself.
    mutating func put(escaped text: String) {
        let plain: Bool? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            for b in utf8 where b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F || b == 0xE2 { return false }
            if utf8.count > 0 { room(utf8.count).update(from: utf8.baseAddress!, count: utf8.count) }
            return true
        }
        if plain == true { return }
        var escaped: [UInt8] = []
        JSONString.appendEscaped(text, to: &escaped, style: .log)
        put(bytes: escaped)
    }

    /// `JSONLineEncoder.appendString`.
    mutating func put(quoted text: String) {
        put(UInt8(ascii: "\""))
        put(escaped: text)
        put(UInt8(ascii: "\""))
    }

    /// `SocketAddress.description`'s bytes.
    mutating func put(address: SocketAddress) {
        guard address.family == AF_INET else { return put(bytes: address.description.utf8) }
        precondition(count + SocketAddress.maxIPv4Description <= capacity, "LineWriter: the record's bound is too small")
        count += address.writeIPv4Description(to: base + count)
    }

    /// The most bytes `put(escaped:)` writes for `text`: six for a byte (`\u00XX`).
    static func escapedBound(_ text: String) -> Int { text.utf8.count * 6 }
}
