public import AirlockWire
import Glibc

/// Where a stored response lives: the request's absolute URL (GET and HEAD share it, RFC 9111
/// 2) and the variant, the values of the request fields the response's `Vary` names (4.1).
public struct CacheKey: @unchecked Sendable, Hashable {   // (`text` is written once, before the key exists)
    /// The URL's bytes and their hash, in one allocation made for the request (no `String`:
    /// making one checked the bytes' UTF-8 and cost a second pass; `url` makes one when asked).
    /// A key's variants share their URL's text.
    let text: URLText
    /// "" without `Vary`; otherwise `name=value` per named field, NUL-separated, absent fields
    /// told apart from empty ones.
    public let variant: String
    /// Hashed once: a lookup and its fill use a key in several tables, and hashing the URL
    /// each time was the miss path's largest cost (perf: `Hasher.combine` 10 %, with retains).
    /// SipHash-1-3 under the process's random key, as `Hasher` would make it, for a third of
    /// its instructions (`SipHash`).
    let hash: Int

    public init(url: String, variant: String = "") {
        self.init(text: URLText.make(url), variant: variant)
    }

    init(text: URLText, variant: String = "") {
        // Most keys have no variant: its empty string is not hashed (keys of one URL differ
        // by their variants' text, which `==` compares). Both halves are keyed, so their
        // mix is as unpredictable as each.
        self.init(text: text, variant: variant,
                  hash: Int(truncatingIfNeeded: variant.isEmpty ? text.hash : (text.hash &* 0x9E37_79B9_7F4A_7C15) ^ SipHash.hash(variant)))
    }

    /// With the hash given (tests make two keys' hashes collide with it).
    init(text: URLText, variant: String, hash: Int) {
        self.text = text
        self.variant = variant
        self.hash = hash
    }

    /// The fill table's key for this one: its hash alone (`FillID`).
    public var fillID: FillID { FillID(hash: hash) }

    /// The hash, as the entry table (`EntryTable`) keys entries by it.
    var hash64: UInt64 { UInt64(UInt(bitPattern: hash)) }

    /// The absolute URL.
    public var url: String { text.string }

    /// The key of the URL alone (no variant), sharing its text.
    public var base: CacheKey { variant.isEmpty ? self : CacheKey(text: text) }

    /// A variant of this key's URL.
    public func variant(_ variant: String) -> CacheKey { CacheKey(text: text, variant: variant) }

    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// What a `Dictionary` probes with: the key's own hash (a seeded SipHash of its text, as
    /// `Hasher` makes it, so no more predictable than the default) mixed with the table's seed
    /// by MurmurHash3's 64-bit finalizer (every output bit depends on every input bit, so two
    /// tables' seeds give unrelated bucket orders, as `Hasher` does), instead of a fresh
    /// `Hasher` run for every probe: a miss probes the entries and the fills twice each, and
    /// each run was ~250 instructions.
    public func _rawHashValue(seed: Int) -> Int { fillID._rawHashValue(seed: seed) }

    /// The hashes first, inline: a table's probe compares its key with each occupied bucket's
    /// on the way, and all but the last differ in their hashes (made a call, the comparison
    /// retained and released both keys' storage at every bucket).
    @inline(__always)
    public static func == (a: CacheKey, b: CacheKey) -> Bool {
        a.hash == b.hash && sameText(a, b)
    }

    @inline(never) @_effects(readonly)
    static func sameText(_ a: CacheKey, _ b: CacheKey) -> Bool {
        (a.text === b.text || a.text.bytesEqual(b.text)) && a.variant == b.variant
    }

    /// The key of a request's URL (as `url(scheme:request:)` spells it), written straight into
    /// its text. Nil for CONNECT's authority-form and OPTIONS `*`.
    public static func of(scheme: Scheme, request: RequestHead) -> CacheKey? {
        switch request.target {
        case .origin(let path):
            return CacheKey(text: URLText.make(scheme: scheme, host: request.host, port: request.port, path: path))
        case .absolute(let s, let host, let port, let path):
            return CacheKey(text: URLText.make(scheme: s, host: host, port: port, path: path))
        case .authority, .asterisk:
            return nil
        }
    }

    /// `scheme://host[:port]path?query`: scheme and host lower-cased, the default port left
    /// out, so `http://A.test:80/x` and `/x` with `Host: a.test` are one URL. Nil for CONNECT's
    /// authority-form and OPTIONS `*`.
    public static func url(scheme: Scheme, request: RequestHead) -> String? {
        of(scheme: scheme, request: request)?.url
    }

    static func absolute(scheme: Scheme, host: String, port: UInt16?, path: String) -> String {
        URLText.make(scheme: scheme, host: host, port: port, path: path).string
    }

    /// The `scheme://host[:port]` part of a URL built by `url(scheme:request:)`.
    static func origin(of url: String) -> Substring {
        let afterScheme = url.firstIndex(of: ":").map { url.index($0, offsetBy: 3, limitedBy: url.endIndex) ?? url.endIndex }
            ?? url.startIndex
        let rest = url[afterScheme...]
        return url[..<(rest.firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex)]
    }

    /// The variant of `request` for a response that varies on `names` (lower-case): each
    /// field's lines combined with ", " (RFC 9110 5.3), absent marked apart from empty.
    static func variant(names: [String], request: RequestHead) -> String {
        guard !names.isEmpty else { return "" }
        return names.map { name in
            let values = request.headers.values(name: name)
            return values.isEmpty ? name + "\u{1}" : name + "=" + values.joined(separator: ", ")
        }.joined(separator: "\u{0}")
    }
}

/// What request collapsing keys a fill in flight by: its key's 64-bit hash alone, a SipHash
/// under the process's secret key, so a client cannot make two URLs share one (and two do by
/// chance once in 2^64). The fill table then neither copies a key in nor compares one out.
/// Sharing one would only be a wait, never a wrong answer: a waiter looks up its own key
/// again when the fill ends, and goes upstream when that finds nothing.
public struct FillID: Hashable, Sendable {
    let hash: Int

    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// As `CacheKey`'s: the hash mixed with the table's seed (MurmurHash3's finalizer).
    public func _rawHashValue(seed: Int) -> Int {
        var x = UInt64(bitPattern: Int64(hash ^ seed))
        x ^= x >> 33
        x &*= 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x &*= 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return Int(bitPattern: UInt(x))
    }
}

/// A cache key's URL: its UTF-8 bytes and their SipHash, in one block (`ManagedBuffer`).
final class URLText: ManagedBuffer<URLText.Header, UInt8> {
    struct Header {
        var count: Int
        var hash: UInt64
    }

    /// Made once and never changed: the bytes and their hash are written before the text is
    /// shared (which is why `CacheKey` may be `@unchecked Sendable`).
    static func make(capacity: Int, _ write: (inout TextBuilder) -> Void) -> URLText {
        let made = unsafeDowncast(URLText.create(minimumCapacity: max(1, capacity)) { _ in Header(count: 0, hash: 0) },
                                  to: URLText.self)
        made.withUnsafeMutablePointers { header, bytes in
            var out = TextBuilder(UnsafeMutableRawBufferPointer(start: bytes, count: capacity))
            write(&out)
            header.pointee.count = out.count
            header.pointee.hash = SipHash.hash13(out.written, key: SipHash.processKey)
        }
        return made
    }

    static func make(_ url: String) -> URLText {
        make(capacity: url.utf8.count) { $0.append(string: url) }
    }

    /// `scheme://host[:port]path?query`: scheme and host lower-cased, the default port left out.
    static func make(scheme: Scheme, host: String, port: UInt16?, path: String) -> URLText {
        // The usual host and path, contiguous UTF-8 with an ASCII host: written from the
        // strings' own bytes (a closure that captured the strings retained and released them).
        let fast: URLText?? = host.utf8.withContiguousStorageIfAvailable { h in
            path.utf8.withContiguousStorageIfAvailable { p in
                UnsafeRawBufferPointer(h).contains { $0 >= 0x80 }
                    ? nil : make(scheme: scheme, host: UnsafeRawBufferPointer(h), port: port, path: UnsafeRawBufferPointer(p))
            } ?? nil
        }
        if let fast = fast ?? nil { return fast }
        // A host past ASCII with upper-case letters is lower-cased by `String` (a character's
        // lower case may be longer), before its bytes are counted; then the same writer.
        let lowered = host.utf8.contains { $0 &- 0x41 < 26 } ? host.lowercased() : host
        return Array(lowered.utf8).withUnsafeBytes { h in
            Array(path.utf8).withUnsafeBytes { p in make(scheme: scheme, host: h, port: port, path: p) }
        }
    }

    /// The URL written in one pass from the host's and path's bytes (a closure that captured
    /// the strings retained and released them), the host's ASCII letters lower-cased as they
    /// are copied.
    private static func make(scheme: Scheme, host: UnsafeRawBufferPointer, port: UInt16?,
                             path: UnsafeRawBufferPointer) -> URLText {
        let prefix: StaticString = scheme == .http ? "http://" : "https://"
        let shownPort = port.flatMap { $0 == scheme.defaultPort ? nil : $0 }
        // Room for ":65535" when a port is shown; `count` is what was written.
        let capacity = prefix.utf8CodeUnitCount + host.count + (shownPort == nil ? 0 : 6) + path.count
        let made = unsafeDowncast(URLText.create(minimumCapacity: max(1, capacity)) { _ in Header(count: 0, hash: 0) },
                                  to: URLText.self)
        made.withUnsafeMutablePointers { header, bytes in
            var at = prefix.utf8CodeUnitCount
            UnsafeMutableRawPointer(bytes).copyMemory(from: prefix.utf8Start, byteCount: at)
            for b in host {
                bytes[at] = b &- 0x41 < 26 ? b | 0x20 : b
                at &+= 1
            }
            if let shownPort {
                var out = TextBuilder(UnsafeMutableRawBufferPointer(start: bytes + at, count: 6))
                out.append(":")
                out.append(decimal: shownPort)
                at &+= out.count
            }
            if let p = path.baseAddress { (bytes + at).update(from: p.assumingMemoryBound(to: UInt8.self), count: path.count) }
            at &+= path.count
            header.pointee.count = at
            header.pointee.hash = SipHash.hash13(UnsafeRawBufferPointer(start: bytes, count: at), key: SipHash.processKey)
        }
        return made
    }

    var count: Int { header.count }
    var hash: UInt64 { header.hash }

    var string: String {
        withUnsafeMutablePointers { header, bytes in
            String(decoding: UnsafeBufferPointer(start: bytes, count: header.pointee.count), as: UTF8.self)
        }
    }

    /// Copies the bytes to `out` (`count` bytes).
    func copyBytes(to out: UnsafeMutableRawPointer) {
        withUnsafeMutablePointers { header, bytes in out.copyMemory(from: bytes, byteCount: header.pointee.count) }
    }

    /// Whether the `count` bytes at `other` are these.
    func bytesEqual(_ other: UnsafeRawPointer) -> Bool {
        withUnsafeMutablePointers { header, bytes in memcmp(bytes, other, header.pointee.count) == 0 }
    }

    func bytesEqual(_ other: URLText) -> Bool {
        withUnsafeMutablePointers { h, a in
            other.withUnsafeMutablePointers { oh, b in
                h.pointee.count == oh.pointee.count && memcmp(a, b, h.pointee.count) == 0
            }
        }
    }
}
