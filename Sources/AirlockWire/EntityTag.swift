/// An `ETag` field value (RFC 9110 8.8.3), parsed strictly:
///
///     entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE
///     etagc      = %x21 / %x23-7E / obs-text
///
/// `W/` is case-sensitive. `text` is the value exactly as received, for `If-Range` and
/// `If-None-Match`; `opaque` is the quoted part, quotes included, for comparisons.
public struct EntityTag: Sendable, Equatable, Hashable {
    public let isWeak: Bool
    public let opaque: String

    public init?(parsing text: String) {
        var text = text
        guard let parsed = text.withUTF8({ Self.parse(UnsafeRawBufferPointer($0)) }) else { return nil }
        self = parsed
    }

    init(isWeak: Bool, opaque: String) {
        self.isWeak = isWeak
        self.opaque = opaque
    }

    /// The field value: `W/"x"` or `"x"`.
    public var text: String { isWeak ? "W/" + opaque : opaque }

    /// Strong comparison (RFC 9110 8.8.3.2): both strong and their opaque tags identical.
    public func strongMatch(_ other: EntityTag) -> Bool { !isWeak && !other.isWeak && opaque == other.opaque }

    /// Weak comparison: the opaque tags identical, weakness ignored.
    public func weakMatch(_ other: EntityTag) -> Bool { opaque == other.opaque }

    static func parse(_ b: UnsafeRawBufferPointer) -> EntityTag? {
        var i = 0
        var weak = false
        if b.count >= 2, b[0] == UInt8(ascii: "W"), b[1] == UInt8(ascii: "/") {
            weak = true
            i = 2
        }
        guard b.count - i >= 2, b[i] == ByteClass.dquote, b[b.count - 1] == ByteClass.dquote else { return nil }
        for j in (i + 1)..<(b.count - 1) {
            let c = b[j]
            guard c == 0x21 || (c >= 0x23 && c != 0x7F) else { return nil }
        }
        return EntityTag(isWeak: weak, opaque: String(decoding: UnsafeRawBufferPointer(rebasing: b[i...]), as: UTF8.self))
    }
}

extension EntityTag {
    /// An `If-None-Match` / `If-Match` value (RFC 9110 13.1.1, 13.1.2): `*` (nil tags), or a
    /// comma-separated list of entity tags, read tag by tag since an opaque tag may hold a comma.
    /// `.invalid` when anything else is there.
    public enum Condition: Sendable, Equatable {
        case any
        case tags([EntityTag])
        case invalid
    }

    public static func condition(_ value: String) -> Condition {
        let b = Array(value.utf8)
        var i = 0
        func skipSeparators() { while i < b.count, b[i] == ByteClass.comma || ByteClass.isWhitespace(b[i]) { i += 1 } }
        skipSeparators()
        if i < b.count, b[i] == UInt8(ascii: "*") {
            i += 1
            skipSeparators()
            return i == b.count ? .any : .invalid
        }
        var tags: [EntityTag] = []
        while i < b.count {
            let start = i
            if b.count - i >= 2, b[i] == UInt8(ascii: "W"), b[i + 1] == UInt8(ascii: "/") { i += 2 }
            guard i < b.count, b[i] == ByteClass.dquote else { return .invalid }
            i += 1
            while i < b.count, b[i] != ByteClass.dquote { i += 1 }
            guard i < b.count else { return .invalid }
            i += 1
            guard let tag = b[start..<i].withUnsafeBytes({ parse($0) }) else { return .invalid }
            tags.append(tag)
            while i < b.count, ByteClass.isWhitespace(b[i]) { i += 1 }
            guard i == b.count || b[i] == ByteClass.comma else { return .invalid }
            skipSeparators()
        }
        return tags.isEmpty ? .invalid : .tags(tags)
    }
}
