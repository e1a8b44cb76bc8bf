import Foundation

/// The message syntax of RFC 9112 (with the field rules of RFC 9110 §5), restated independently of Airlock's
/// parser, to judge what Airlock sent to an origin: strict, no leniency a recipient MAY allow.
public enum RFC9112 {
    /// tchar (RFC 9110 §5.6.2).
    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }

    /// field-vchar / SP / HTAB: VCHAR, obs-text (0x80-0xFF), space and tab; no CTL, no DEL.
    static func isFieldValueByte(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x09 || (b >= 0x21 && b != 0x7F)
    }

    /// Every way `head` (request line, field lines and the empty line, as received) breaks RFC 9112 for a
    /// request sent by an intermediary to an origin: empty when it is well formed. Checks: CRLF line
    /// endings only (no bare CR or LF); `method SP origin-form SP HTTP/1.1`; each field line
    /// `token ":" OWS value OWS` with no whitespace before the colon and no obs-fold; field values of
    /// VCHAR/obs-text/SP/HTAB only; exactly one Host; Content-Length as one run of digits, at most once;
    /// never Content-Length with Transfer-Encoding; a Transfer-Encoding ending in chunked.
    public static func requestHeadViolations(_ head: [UInt8]) -> [String] {
        var problems: [String] = []
        let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        guard head.count >= 4, Array(head.suffix(4)) == [cr, lf, cr, lf] else {
            return ["head does not end with CRLF CRLF"]
        }
        // Split on CRLF; any other CR or LF is a violation.
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        var i = 0
        while i < head.count {
            let b = head[i]
            if b == cr, i + 1 < head.count, head[i + 1] == lf {
                lines.append(current)
                current = []
                i += 2
                continue
            }
            if b == cr || b == lf { problems.append("bare \(b == cr ? "CR" : "LF") at byte \(i)") }
            current.append(b)
            i += 1
        }
        // The last two lines are the last field line (or request line) and the empty line.
        guard lines.count >= 2, lines.last?.isEmpty == true else { return problems + ["no empty line ending the head"] }
        lines.removeLast()

        let requestLine = lines[0]
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
        if parts.count != 3 {
            problems.append("request line is not method SP target SP version: \(show(requestLine))")
        } else {
            if parts[0].isEmpty || !parts[0].allSatisfy(isTchar) { problems.append("method is not a token: \(show(parts[0]))") }
            let target = parts[1]
            if target.first != UInt8(ascii: "/") && Array(target) != [UInt8(ascii: "*")] {
                problems.append("request target is not origin-form: \(show(target))")
            }
            if !target.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) {
                problems.append("request target has a byte outside VCHAR: \(show(target))")
            }
            if Array(parts[2]) != Array("HTTP/1.1".utf8) { problems.append("version is not HTTP/1.1: \(show(parts[2]))") }
        }

        var hosts = 0
        var lengths: [[UInt8]] = []
        var codings: [[UInt8]] = []
        for line in lines.dropFirst() {
            if line.first == 0x20 || line.first == 0x09 {
                problems.append("obs-fold (line starting with whitespace): \(show(line))")
                continue
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                problems.append("field line without a colon: \(show(line))")
                continue
            }
            let name = line[..<colon]
            if name.isEmpty || !name.allSatisfy(isTchar) {
                problems.append("field name is not a token (or has whitespace before the colon): \(show(line))")
            }
            var value = line[(colon + 1)...]
            while let f = value.first, f == 0x20 || f == 0x09 { value = value.dropFirst() }
            while let l = value.last, l == 0x20 || l == 0x09 { value = value.dropLast() }
            if !value.allSatisfy(isFieldValueByte) { problems.append("field value has a control byte: \(show(line))") }
            switch String(decoding: name, as: UTF8.self).lowercased() {
            case "host": hosts += 1
            case "content-length": lengths.append(Array(value))
            case "transfer-encoding": codings.append(Array(value))
            default: break
            }
        }
        if hosts != 1 { problems.append("\(hosts) Host fields (exactly one required)") }
        if lengths.count > 1 { problems.append("\(lengths.count) Content-Length fields") }
        for l in lengths where l.isEmpty || !l.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            problems.append("Content-Length is not 1*DIGIT: \(show(l))")
        }
        if !lengths.isEmpty && !codings.isEmpty { problems.append("both Content-Length and Transfer-Encoding") }
        if let last = codings.last {
            let final = last.split(separator: UInt8(ascii: ",")).last.map { String(decoding: $0, as: UTF8.self) }
            if final?.trimmingCharacters(in: [" ", "\t"]).lowercased() != "chunked" {
                problems.append("Transfer-Encoding does not end in chunked: \(show(last))")
            }
        }
        return problems
    }

    static func show<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription
    }
}
