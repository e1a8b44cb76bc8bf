/// Writes canonical HTTP/1.1 heads: single SPs, "Name: value", CRLF line ends.
///
/// Defence in depth against header injection: bytes that could break framing never reach
/// `bytes`. In values, targets and reasons every CTL except HTAB (and DEL) is written as SP; in
/// method and field names every non-token byte is dropped; a target's SPs become `%20`.
public struct HeadWriter: ~Copyable {
    // A plain growable buffer: appending a field is a bounds check and a copy, with no
    // Array bookkeeping per append (heads are written on every exchange).
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    public private(set) var count = 0

    public init(capacity: Int = 512) {
        self.capacity = Swift.max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// A copy of what has been written.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Empties the writer, keeping its capacity.
    public mutating func reset() {
        count = 0
    }

    /// "GET /x HTTP/1.1\r\n".
    public mutating func requestLine(method: Method, target: String) {
        appendToken(method.name)
        put(ByteClass.sp)
        var target = target
        target.withUTF8 { t in
            let t = UnsafeRawBufferPointer(t)
            if Self.isPlainTarget(t) {
                put(t)
            } else {
                for b in t {
                    if b == ByteClass.sp {
                        put(0x25); put(0x32); put(0x30)
                    } else if b > ByteClass.sp && b != 0x7F {
                        put(b)
                    }
                }
            }
        }
        appendASCII(" HTTP/1.1\r\n")
    }

    @inline(__always)
    private static func isPlainTarget(_ t: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < t.count && t[i] > ByteClass.sp && t[i] != 0x7F { i += 1 }
        return i == t.count
    }

    /// "HTTP/1.1 200 OK\r\n". A status outside 100...999 is clamped into it.
    public mutating func statusLine(status: Int, reason: String) {
        let status = min(max(status, 100), 999)
        appendASCII("HTTP/1.1 ")
        let out = reserve(4)
        out[0] = UInt8(truncatingIfNeeded: 0x30 + status / 100)
        out[1] = UInt8(truncatingIfNeeded: 0x30 + status / 10 % 10)
        out[2] = UInt8(truncatingIfNeeded: 0x30 + status % 10)
        out[3] = ByteClass.sp
        count += 4
        appendValue(reason)
        appendCRLF()
    }

    /// "Name: value\r\n".
    public mutating func field(name: String, value: String) {
        var name = name
        name.withUTF8 { field(token: UnsafeRawBufferPointer($0), value: value) }
    }

    /// "Name: value\r\n" for a name Airlock spells out (still checked like any other).
    public mutating func field(_ name: StaticString, value: String) {
        field(token: Self.bytes(of: name), value: value)
    }

    private mutating func field(token: UnsafeRawBufferPointer, value: String) {
        appendToken(token)
        appendColonSpace()
        appendValue(value)
        appendCRLF()
    }

    /// "Name: 1234\r\n": a decimal value written without building a String.
    public mutating func field(_ name: StaticString, decimal: UInt64) {
        appendToken(Self.bytes(of: name))
        appendColonSpace()
        var digits = 1
        var rest = decimal / 10
        while rest > 0 { digits += 1; rest /= 10 }
        let out = reserve(digits)
        var v = decimal
        for k in stride(from: digits - 1, through: 0, by: -1) {
            out[k] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
            v /= 10
        }
        count += digits
        appendCRLF()
    }

    /// "Name: value\r\n" with the value written in place by `build` (at most `capacity` bytes;
    /// a `TextBuilder` traps past it), then checked like any other value: no String or array
    /// made for it (a `Cache-Status` on every cached exchange).
    public mutating func field(_ name: StaticString, capacity: Int, _ build: (inout TextBuilder) -> Void) {
        appendToken(Self.bytes(of: name))
        appendColonSpace()
        let out = reserve(capacity + 2)
        var text = TextBuilder(UnsafeMutableRawBufferPointer(start: out, count: capacity))
        build(&text)
        count += Self.writeValue(UnsafeRawBufferPointer(start: out, count: text.count), to: out)   // checked in place
        appendCRLF()
    }

    /// The fixed start of a field written on every exchange, e.g. "X-Request-Id: ab12-0-":
    /// checked once when made (as `field(name:value:)` checks), then copied in one move.
    public struct FieldPrefix: Sendable {
        let bytes: [UInt8]

        public init(name: StaticString, valuePrefix: String) {
            var w = HeadWriter(capacity: 64)
            w.appendToken(HeadWriter.bytes(of: name))
            w.appendColonSpace()
            w.appendValue(valuePrefix)
            bytes = w.bytes
        }
    }

    /// "<whole>\r\n": a field made once as a `FieldPrefix` holding its whole value, copied in one
    /// move (a value written on many exchanges, e.g. a cache miss's `Cache-Status`).
    public mutating func field(_ whole: FieldPrefix) {
        whole.bytes.withUnsafeBytes { put($0) }
        appendCRLF()
    }

    /// "<prefix><hex>\r\n": `hex` in lower-case hexadecimal, with no String built (a request id).
    public mutating func field(_ prefix: FieldPrefix, hex: UInt64) {
        prefix.bytes.withUnsafeBytes { put($0) }
        var digits = 1
        var rest = hex >> 4
        while rest > 0 { digits += 1; rest >>= 4 }
        let out = reserve(digits + 2)
        var v = hex
        for k in stride(from: digits - 1, through: 0, by: -1) {
            let d = UInt8(truncatingIfNeeded: v & 0xF)
            out[k] = d < 10 ? 0x30 + d : 0x57 + d
            v >>= 4
        }
        out[digits] = ByteClass.cr
        out[digits + 1] = ByteClass.lf
        count += digits + 2
    }

    /// Copies field `i` of `headers` byte for byte, with no String in between.
    public mutating func field(from headers: HTTPHeaders, at i: Int) {
        // Room reserved first, so the closure writes through a pointer and captures nothing
        // mutable (a captured `self` would cost a dynamic exclusivity check per field).
        let out = reserve(headers.fieldBytes(at: i) + 4)
        count += headers.withFieldBytes(at: i) { name, value in Self.writeField(name, value, to: out) }
    }

    /// Writes "name: value\r\n" at `out`, which has room for both plus 4; returns the bytes
    /// written (fewer when bytes of a bad name are dropped).
    @inline(__always)
    private static func writeField(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer,
                                   to out: UnsafeMutablePointer<UInt8>) -> Int {
        var k = writeToken(name, to: out)
        k += writePair(ByteClass.colon, ByteClass.sp, to: out + k)
        k += writeValue(value, to: out + k)
        return k + writePair(ByteClass.cr, ByteClass.lf, to: out + k)
    }

    /// Writes `a` and `b` at `out` (": " or CRLF); returns 2.
    @inline(__always)
    private static func writePair(_ a: UInt8, _ b: UInt8, to out: UnsafeMutablePointer<UInt8>) -> Int {
        out[0] = a
        out[1] = b
        return 2
    }

    /// Names Airlock writes and parsed names are valid tokens: checked, then copied in bulk.
    /// Any other byte is dropped. Writes at most `token.count` bytes at `out`; returns how many.
    @inline(__always)
    private static func writeToken(_ token: UnsafeRawBufferPointer, to out: UnsafeMutablePointer<UInt8>) -> Int {
        guard !ByteClass.allTchar(token) else { return copy(token, to: out) }
        var k = 0
        for b in token where ByteClass.isTchar(b) { out[k] = b; k += 1 }
        return k
    }

    /// Valid values are copied in bulk; in any other, each CTL but HTAB (and DEL) becomes SP.
    /// Writes `value.count` bytes at `out`.
    @inline(__always)
    private static func writeValue(_ value: UnsafeRawBufferPointer, to out: UnsafeMutablePointer<UInt8>) -> Int {
        guard !ByteClass.allFieldValueBytes(value) else { return copy(value, to: out) }
        for (k, b) in value.enumerated() { out[k] = ByteClass.isFieldValueByte(b) ? b : ByteClass.sp }
        return value.count
    }

    @inline(__always)
    private static func copy(_ bytes: UnsafeRawBufferPointer, to out: UnsafeMutablePointer<UInt8>) -> Int {
        if let p = bytes.baseAddress { UnsafeMutableRawPointer(out).copyMemory(from: p, byteCount: bytes.count) }
        return bytes.count
    }

    private static func bytes(of text: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// The empty line ending the head.
    public mutating func end() {
        appendCRLF()
    }

    // MARK: - Appending

    /// Room for `n` more bytes at the end; the caller writes them and adds `n` to `count`.
    @inline(__always)
    private mutating func reserve(_ n: Int) -> UnsafeMutablePointer<UInt8> {
        if n > capacity - count { grow(n) }
        return base + count
    }

    @inline(never)
    private mutating func grow(_ n: Int) {
        let newCapacity = Swift.max(capacity * 2, count + n)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    private mutating func put(_ b: UInt8) {
        reserve(1).pointee = b
        count += 1
    }

    @inline(__always)
    private mutating func put(_ bytes: UnsafeRawBufferPointer) {
        count += Self.copy(bytes, to: reserve(bytes.count))
    }

    private mutating func appendToken(_ token: UnsafeRawBufferPointer) {
        count += Self.writeToken(token, to: reserve(token.count))
    }

    private mutating func appendToken(_ token: String) {
        var token = token
        token.withUTF8 { appendToken(UnsafeRawBufferPointer($0)) }
    }

    private mutating func appendValue(_ value: String) {
        var value = value
        value.withUTF8 { v in
            let v = UnsafeRawBufferPointer(v)
            count += Self.writeValue(v, to: reserve(v.count))
        }
    }

    private mutating func appendASCII(_ text: StaticString) {
        put(Self.bytes(of: text))
    }

    @inline(__always)
    private mutating func appendColonSpace() {
        count += Self.writePair(ByteClass.colon, ByteClass.sp, to: reserve(2))
    }

    @inline(__always)
    private mutating func appendCRLF() {
        count += Self.writePair(ByteClass.cr, ByteClass.lf, to: reserve(2))
    }
}
