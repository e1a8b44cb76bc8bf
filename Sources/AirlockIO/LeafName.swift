import Glibc

/// A name a leaf certificate may be minted for, checked and canonical: a DNS name
/// (lowercase, no trailing dot, labels of letters, digits, `-` and `_`, at most 253 bytes)
/// or an IPv4/IPv6 literal (as `inet_ntop` writes it; brackets allowed on input). The
/// name comes from a client (SNI, CONNECT host): nothing else gets near OpenSSL's
/// extension syntax, so a hostile name cannot add a SAN or an extension.
struct LeafName: Hashable, Sendable {
    enum Kind: Sendable { case dns, ipAddress }

    let text: String
    let kind: Kind

    static let maxLength = 253

    init(validating raw: String) throws(IOError) {
        guard raw.utf8.count <= Self.maxLength + 2 else {
            throw IOError(.leafName, "name longer than \(Self.maxLength) bytes")
        }
        var name = raw
        if name.hasPrefix("[") && name.hasSuffix("]") && name.count > 2 {
            name = String(name.dropFirst().dropLast())
            guard let ip = Self.canonicalIP(name, family: AF_INET6) else {
                throw IOError(.leafName, "not an IPv6 literal: \(Self.printable(raw))")
            }
            text = ip
            kind = .ipAddress
            return
        }
        if let ip = Self.canonicalIP(name, family: AF_INET) ?? Self.canonicalIP(name, family: AF_INET6) {
            text = ip
            kind = .ipAddress
            return
        }
        if name.hasSuffix(".") { name.removeLast() }
        guard Self.isDNSName(name.utf8) else {
            throw IOError(.leafName, "not a DNS name or IP literal: \(Self.printable(raw))")
        }
        text = name.lowercased()
        kind = .dns
    }

    /// Labels of 1...63 bytes of [A-Za-z0-9_-], not starting or ending with `-`, joined by
    /// single dots, 1...253 bytes in all; not all digits and dots (that would be an IP).
    static func isDNSName(_ bytes: String.UTF8View) -> Bool {
        guard (1...maxLength).contains(bytes.count) else { return false }
        var labelLength = 0
        var previous: UInt8 = UInt8(ascii: ".")
        var sawNonDigit = false
        for b in bytes {
            switch b {
            case UInt8(ascii: "."):
                guard labelLength > 0, previous != UInt8(ascii: "-") else { return false }
                labelLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"):
                sawNonDigit = true
                labelLength += 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                labelLength += 1
            case UInt8(ascii: "-"):
                guard labelLength > 0 else { return false }
                sawNonDigit = true
                labelLength += 1
            default:
                return false
            }
            guard labelLength <= 63 else { return false }
            previous = b
        }
        return labelLength > 0 && previous != UInt8(ascii: "-") && sawNonDigit
    }

    /// `text` parsed as an address of `family` and written back canonically, or nil.
    static func canonicalIP(_ text: String, family: Int32) -> String? {
        var storage = in6_addr()
        guard inet_pton(family, text, &storage) == 1 else { return nil }
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, &storage, &out, socklen_t(out.count)) != nil else { return nil }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The name for an error message: at most 64 printable ASCII bytes, the rest escaped.
    static func printable(_ raw: String) -> String {
        var out = ""
        for b in raw.utf8.prefix(64) {
            if b >= 0x20 && b < 0x7F && b != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "\\x" + String(b, radix: 16)
            }
        }
        return raw.utf8.count > 64 ? "\"\(out)…\"" : "\"\(out)\""
    }

    /// The subjectAltName value in OpenSSL's configuration syntax (safe: `text` is checked).
    var subjectAltName: String { kind == .dns ? "DNS:\(text)" : "IP:\(text)" }
}
