/// Writes canonical HTTP/1.1 heads: single SPs, "Name: value", CRLF line ends.
///
/// Defence in depth against header injection: bytes that could break framing never reach
/// `bytes`. In values, targets and reasons every CTL except HTAB (and DEL) is written as SP; in
/// method and field names every non-token byte is dropped; a target's SPs become `%20`.
public struct HeadWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// "GET /x HTTP/1.1\r\n".
    public mutating func requestLine(method: Method, target: String) {
        appendToken(method.name)
        bytes.append(ByteClass.sp)
        if target.utf8.allSatisfy({ $0 > ByteClass.sp && $0 != 0x7F }) {
            bytes.append(contentsOf: target.utf8)
        } else {
            appendTarget(target)
        }
        appendASCII(" HTTP/1.1\r\n")
    }

    private mutating func appendTarget(_ target: String) {
        for b in target.utf8 {
            if b == ByteClass.sp {
                bytes.append(contentsOf: [0x25, 0x32, 0x30])
            } else if b > ByteClass.sp && b != 0x7F {
                bytes.append(b)
            }
        }
    }

    /// "HTTP/1.1 200 OK\r\n". A status outside 100...999 is clamped into it.
    public mutating func statusLine(status: Int, reason: String) {
        let status = min(max(status, 100), 999)
        appendASCII("HTTP/1.1 ")
        bytes.append(UInt8(truncatingIfNeeded: 0x30 + status / 100))
        bytes.append(UInt8(truncatingIfNeeded: 0x30 + status / 10 % 10))
        bytes.append(UInt8(truncatingIfNeeded: 0x30 + status % 10))
        bytes.append(ByteClass.sp)
        appendValue(reason.utf8)
        appendCRLF()
    }

    /// "Name: value\r\n".
    public mutating func field(name: String, value: String) {
        appendToken(name)
        bytes.append(ByteClass.colon)
        bytes.append(ByteClass.sp)
        appendValue(value.utf8)
        appendCRLF()
    }

    /// Copies field `i` of `headers` byte for byte, with no String in between.
    public mutating func field(from headers: HTTPHeaders, at i: Int) {
        // Parsed fields are already valid: check with a scan and copy in bulk; only a field
        // that fails the check (one built by hand) takes the byte-by-byte sanitising path.
        headers.withNameBytes(at: i) { name in
            if name.allSatisfy(ByteClass.isTchar) {
                bytes.append(contentsOf: name)
            } else {
                for b in name where ByteClass.isTchar(b) { bytes.append(b) }
            }
        }
        bytes.append(ByteClass.colon)
        bytes.append(ByteClass.sp)
        headers.withValueBytes(at: i) { value in
            if value.allSatisfy(ByteClass.isFieldValueByte) {
                bytes.append(contentsOf: value)
            } else {
                appendValue(value)
            }
        }
        appendCRLF()
    }

    /// The empty line ending the head.
    public mutating func end() {
        appendCRLF()
    }

    /// Empties `bytes`, keeping its capacity.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
    }

    private mutating func appendToken(_ token: String) {
        // Names Airlock writes are valid tokens: check, then copy in bulk.
        if token.utf8.allSatisfy(ByteClass.isTchar) {
            bytes.append(contentsOf: token.utf8)
        } else {
            for b in token.utf8 where ByteClass.isTchar(b) { bytes.append(b) }
        }
    }

    private mutating func appendValue(_ value: String.UTF8View) {
        if value.allSatisfy(ByteClass.isFieldValueByte) {
            bytes.append(contentsOf: value)
        } else {
            for b in value { bytes.append(ByteClass.isFieldValueByte(b) ? b : ByteClass.sp) }
        }
    }

    private mutating func appendValue(_ value: UnsafeRawBufferPointer) {
        for b in value {
            bytes.append(ByteClass.isFieldValueByte(b) ? b : ByteClass.sp)
        }
    }

    private mutating func appendASCII(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    private mutating func appendCRLF() {
        bytes.append(ByteClass.cr)
        bytes.append(ByteClass.lf)
    }
}
