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
        var reason = reason
        reason.withUTF8 { appendValue(UnsafeRawBufferPointer($0)) }
        appendCRLF()
    }

    /// "Name: value\r\n".
    public mutating func field(name: String, value: String) {
        appendToken(name)
        appendColonSpace()
        var value = value
        value.withUTF8 { appendValue(UnsafeRawBufferPointer($0)) }
        appendCRLF()
    }

    /// "Name: value\r\n" for a name Airlock spells out (still checked like any other).
    public mutating func field(_ name: StaticString, value: String) {
        appendToken(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        appendColonSpace()
        var value = value
        value.withUTF8 { appendValue(UnsafeRawBufferPointer($0)) }
        appendCRLF()
    }

    /// "Name: 1234\r\n": a decimal value written without building a String.
    public mutating func field(_ name: StaticString, decimal: UInt64) {
        appendToken(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
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
        var k = 0
        if ByteClass.allTchar(name) {
            if let p = name.baseAddress { UnsafeMutableRawPointer(out).copyMemory(from: p, byteCount: name.count) }
            k = name.count
        } else {
            for b in name where ByteClass.isTchar(b) { out[k] = b; k += 1 }
        }
        out[k] = ByteClass.colon
        out[k + 1] = ByteClass.sp
        k += 2
        if ByteClass.allFieldValueBytes(value) {
            if let p = value.baseAddress { UnsafeMutableRawPointer(out + k).copyMemory(from: p, byteCount: value.count) }
            k += value.count
        } else {
            for b in value { out[k] = ByteClass.isFieldValueByte(b) ? b : ByteClass.sp; k += 1 }
        }
        out[k] = ByteClass.cr
        out[k + 1] = ByteClass.lf
        return k + 2
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
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        UnsafeMutableRawPointer(reserve(bytes.count)).copyMemory(from: src, byteCount: bytes.count)
        count += bytes.count
    }

    /// Names Airlock writes and parsed names are valid tokens: checked, then copied in bulk.
    /// Any other byte is dropped.
    private mutating func appendToken(_ token: UnsafeRawBufferPointer) {
        if ByteClass.allTchar(token) {
            put(token)
        } else {
            for b in token where ByteClass.isTchar(b) { put(b) }
        }
    }

    private mutating func appendToken(_ token: String) {
        var token = token
        token.withUTF8 { appendToken(UnsafeRawBufferPointer($0)) }
    }

    /// Valid values are copied in bulk; in any other, each CTL but HTAB (and DEL) becomes SP.
    private mutating func appendValue(_ value: UnsafeRawBufferPointer) {
        if ByteClass.allFieldValueBytes(value) {
            put(value)
        } else {
            for b in value { put(ByteClass.isFieldValueByte(b) ? b : ByteClass.sp) }
        }
    }

    private mutating func appendASCII(_ text: StaticString) {
        put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    private mutating func appendColonSpace() {
        let out = reserve(2)
        out[0] = ByteClass.colon
        out[1] = ByteClass.sp
        count += 2
    }

    @inline(__always)
    private mutating func appendCRLF() {
        let out = reserve(2)
        out[0] = ByteClass.cr
        out[1] = ByteClass.lf
        count += 2
    }
}
