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
