/// Field names the wire layer, the gateway and the response cache act on, recognised once at
/// parse time so later look-ups compare a byte (or test a bit, `HTTPHeaders.contains`) instead
/// of a string.
///
/// Being known changes nothing about how a field is relayed: names keep their case, and which
/// fields are hop-by-hop is `HopByHop`'s own list.
public enum KnownField: UInt8, Sendable, CaseIterable {
    case other, host, contentLength, transferEncoding, connection, proxyConnection, keepAlive,
         te, trailer, upgrade, proxyAuthorization, via, expect, contentType, date, server,
         requestID,   // X-Request-Id: Airlock keeps a well-formed one and sends its own otherwise
         // What the response cache reads (RFC 9111) on every request it looks up or stores.
         cacheControl, lastModified, expires, etag, age, vary, setCookie, authorization,
         ifNoneMatch, ifModifiedSince,
         range   // a request with Range bypasses the cache

    /// The canonical spelling, e.g. "Content-Length"; "" for `.other`.
    public var canonicalName: String {
        switch self {
        case .other: ""
        case .host: "Host"
        case .contentLength: "Content-Length"
        case .transferEncoding: "Transfer-Encoding"
        case .connection: "Connection"
        case .proxyConnection: "Proxy-Connection"
        case .keepAlive: "Keep-Alive"
        case .te: "TE"
        case .trailer: "Trailer"
        case .upgrade: "Upgrade"
        case .proxyAuthorization: "Proxy-Authorization"
        case .via: "Via"
        case .expect: "Expect"
        case .contentType: "Content-Type"
        case .date: "Date"
        case .server: "Server"
        case .requestID: "X-Request-Id"
        case .cacheControl: "Cache-Control"
        case .lastModified: "Last-Modified"
        case .expires: "Expires"
        case .etag: "ETag"
        case .age: "Age"
        case .vary: "Vary"
        case .setCookie: "Set-Cookie"
        case .authorization: "Authorization"
        case .ifNoneMatch: "If-None-Match"
        case .ifModifiedSince: "If-Modified-Since"
        case .range: "Range"
        }
    }

    /// This field's bit in a `Set` (and in `HTTPHeaders`' set of the known fields it holds).
    @inlinable
    var bit: UInt32 { 1 << UInt32(rawValue) }

    /// Some known fields, one bit each (no allocation): e.g. the fields a cache never stores.
    public struct Set: Sendable, Equatable {
        @usableFromInline let bits: UInt32

        public init(_ fields: KnownField...) {
            var bits: UInt32 = 0
            for field in fields { bits |= field.bit }
            self.bits = bits
        }

        @inlinable
        init(bits: UInt32) { self.bits = bits }

        @inlinable
        public func contains(_ field: KnownField) -> Bool { bits & field.bit != 0 }

        public func union(_ other: Set) -> Set { Set(bits: bits | other.bits) }

        public func inserting(_ field: KnownField) -> Set { Set(bits: bits | field.bit) }

        @inlinable
        public func removing(_ field: KnownField) -> Set { Set(bits: bits & ~field.bit) }
    }

    /// Classifies a field name, ignoring ASCII case.
    public init(name: String) {
        var name = name
        self = name.withUTF8 { KnownField.classify(UnsafeRawBufferPointer($0)) }
    }

    /// Classifies field-name bytes, ignoring ASCII case. Dispatches on length first, then (where
    /// several names share a length) on the first letter, and compares the name a word at a time.
    static func classify(_ name: UnsafeRawBufferPointer) -> KnownField {
        @inline(__always) func eq(_ name: UnsafeRawBufferPointer, _ lowered: StaticString) -> Bool { matches(name, lowered) }
        switch name.count {
        case 2: return eq(name, "te") ? .te : .other
        case 3:
            if eq(name, "via") { return .via }
            return eq(name, "age") ? .age : .other
        case 5: return eq(name, "range") ? .range : .other
        case 4:
            switch name[0] | 0x20 {
            case UInt8(ascii: "h"): return eq(name, "host") ? .host : .other
            case UInt8(ascii: "d"): return eq(name, "date") ? .date : .other
            case UInt8(ascii: "e"): return eq(name, "etag") ? .etag : .other
            case UInt8(ascii: "v"): return eq(name, "vary") ? .vary : .other
            default: return .other
            }
        case 6:
            if eq(name, "expect") { return .expect }
            return eq(name, "server") ? .server : .other
        case 7:
            switch name[0] | 0x20 {
            case UInt8(ascii: "t"): return eq(name, "trailer") ? .trailer : .other
            case UInt8(ascii: "u"): return eq(name, "upgrade") ? .upgrade : .other
            case UInt8(ascii: "e"): return eq(name, "expires") ? .expires : .other
            default: return .other
            }
        case 10:
            switch name[0] | 0x20 {
            case UInt8(ascii: "c"): return eq(name, "connection") ? .connection : .other
            case UInt8(ascii: "k"): return eq(name, "keep-alive") ? .keepAlive : .other
            case UInt8(ascii: "s"): return eq(name, "set-cookie") ? .setCookie : .other
            default: return .other
            }
        case 12:
            if eq(name, "content-type") { return .contentType }
            return eq(name, "x-request-id") ? .requestID : .other
        case 13:
            switch name[0] | 0x20 {
            case UInt8(ascii: "c"): return eq(name, "cache-control") ? .cacheControl : .other
            case UInt8(ascii: "l"): return eq(name, "last-modified") ? .lastModified : .other
            case UInt8(ascii: "a"): return eq(name, "authorization") ? .authorization : .other
            case UInt8(ascii: "i"): return eq(name, "if-none-match") ? .ifNoneMatch : .other
            default: return .other
            }
        case 14: return eq(name, "content-length") ? .contentLength : .other
        case 16: return eq(name, "proxy-connection") ? .proxyConnection : .other
        case 17:
            if eq(name, "transfer-encoding") { return .transferEncoding }
            return eq(name, "if-modified-since") ? .ifModifiedSince : .other
        case 19: return eq(name, "proxy-authorization") ? .proxyAuthorization : .other
        default: return .other
        }
    }

    /// Whether `name` is `lowered` (lower-case letters and `-` only, at least 2 bytes, as long
    /// as `name`), ignoring the case of `name`'s letters: `ByteClass.equalsLowercased` a word at
    /// a time. Each word of the name, with bit 5 set in the bytes where `lowered` has a letter,
    /// must equal `lowered`'s: a letter matches in either case, a `-` only itself. Words overlap
    /// where the length is not a multiple of theirs.
    @inline(__always)
    static func matches(_ name: UnsafeRawBufferPointer, _ lowered: StaticString) -> Bool {
        let n = lowered.utf8CodeUnitCount
        guard name.count == n, let p = name.baseAddress else { return false }
        let q = UnsafeRawPointer(lowered.utf8Start)
        // Letters (0x61–0x7A) have bit 6 set, `-` (0x2D) has not: bit 6 moved to bit 5 is the mask.
        @inline(__always) func same<W: FixedWidthInteger & UnsignedInteger>(_ at: Int, _: W.Type) -> Bool {
            let want = q.loadUnaligned(fromByteOffset: at, as: W.self)
            let fold = (want >> 1) & (W(truncatingIfNeeded: UInt64(0x2020_2020_2020_2020)))
            return p.loadUnaligned(fromByteOffset: at, as: W.self) | fold == want
        }
        switch n {
        case ..<4: return same(0, UInt16.self) && same(n - 2, UInt16.self)
        case ..<8: return same(0, UInt32.self) && same(n - 4, UInt32.self)
        case ...16: return same(0, UInt64.self) && same(n - 8, UInt64.self)
        default: return same(0, UInt64.self) && same(8, UInt64.self) && same(n - 8, UInt64.self)
        }
    }
}
