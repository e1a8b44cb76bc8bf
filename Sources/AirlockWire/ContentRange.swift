/// A `Content-Range` field value (RFC 9110 14.4), parsed strictly:
///
///     Content-Range     = range-unit SP ( range-resp / unsatisfied-range )
///     range-resp        = incl-range "/" ( complete-length / "*" )
///     incl-range        = first-pos "-" last-pos
///     unsatisfied-range = "*/" complete-length
///
/// Only the `bytes` unit (compared ignoring case, as range units are) is understood. Exactly one
/// SP after the unit; positions are 1 to 18 ASCII digits (no sign, no space, no overflow); an
/// `incl-range` needs first ≤ last, and last < complete-length when the length is known.
/// Anything else, a hostile or garbled value, parses to nil: a resume never splices on a guess.
public enum ContentRange: Sendable, Equatable {
    /// `bytes first-last/length` (`length` nil for `*`).
    case bytes(first: UInt64, last: UInt64, completeLength: UInt64?)
    /// `bytes */length`, sent with 416.
    case unsatisfied(completeLength: UInt64)

    /// Digits beyond this many are refused: 10^18 bytes is far past any representation and
    /// keeps every sum below UInt64's range.
    static let maxDigits = 18

    public init?(parsing text: String) {
        var text = text
        guard let parsed = text.withUTF8({ Self.parse(UnsafeRawBufferPointer($0)) }) else { return nil }
        self = parsed
    }

    /// The body bytes the range covers (`last - first + 1`); nil for `unsatisfied`.
    public var length: UInt64? {
        if case .bytes(let first, let last, _) = self { return last - first + 1 }
        return nil
    }

    static func parse(_ b: UnsafeRawBufferPointer) -> ContentRange? {
        // "bytes" SP
        guard b.count > 6, ByteClass.equalsLowercased(UnsafeRawBufferPointer(rebasing: b[0..<5]), "bytes"),
              b[5] == ByteClass.sp else { return nil }
        var i = 6
        if b[i] == UInt8(ascii: "*") {
            guard i + 1 < b.count, b[i + 1] == UInt8(ascii: "/") else { return nil }
            i += 2
            guard let length = digits(b, &i), i == b.count else { return nil }
            return .unsatisfied(completeLength: length)
        }
        guard let first = digits(b, &i), i < b.count, b[i] == UInt8(ascii: "-") else { return nil }
        i += 1
        guard let last = digits(b, &i), i < b.count, b[i] == UInt8(ascii: "/"), first <= last else { return nil }
        i += 1
        if i + 1 == b.count, b[i] == UInt8(ascii: "*") {
            return .bytes(first: first, last: last, completeLength: nil)
        }
        guard let length = digits(b, &i), i == b.count, last < length else { return nil }
        return .bytes(first: first, last: last, completeLength: length)
    }

    /// 1...maxDigits ASCII digits at `i`, advancing past them.
    private static func digits(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> UInt64? {
        let start = i
        var value: UInt64 = 0
        while i < b.count, ByteClass.isDigit(b[i]) {
            guard i - start < maxDigits else { return nil }
            value = value * 10 + UInt64(b[i] - 0x30)
            i += 1
        }
        return i > start ? value : nil
    }
}
