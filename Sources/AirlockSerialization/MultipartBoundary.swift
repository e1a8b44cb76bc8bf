import AirlockWire

/// The boundary of a `multipart/form-data` body, read from its Content-Type.
///
/// - The media type is `multipart/form-data`, compared without case; anything else is not
///   validated at all (`isFormData(contentType:)` is false) and is `multipart-not-form-data` here.
/// - Exactly one `boundary` parameter (name without case), a token or a quoted-string; none is
///   `multipart-no-boundary`, two are `multipart-bad-boundary`. Other parameters are ignored.
/// - RFC 2046 §5.1.1: 1–70 characters from bcharsnospace (`DIGIT ALPHA '()+_,-./:=?`) or space,
///   not ending in a space; otherwise `multipart-bad-boundary`. The boundary is case-sensitive.
/// - A parameter list that does not parse (`; =x`, an unclosed quote) is `multipart-bad-boundary`.
public struct MultipartBoundary: Sendable, Equatable, CustomStringConvertible {
    /// The boundary's bytes, without the leading `--` and unquoted.
    public let bytes: [UInt8]

    /// RFC 2046 §5.1.1's upper bound on a boundary's length.
    public static let maxLength = 70

    public var description: String { String(decoding: bytes, as: UTF8.self) }

    public init(contentType: String) throws(MultipartError) {
        var copy = contentType
        let result = copy.withUTF8 { utf8 in
            Result { () throws(MultipartError) in try Self.parse(UnsafeRawBufferPointer(utf8)) }
        }
        self.bytes = try result.get()
    }

    public init(contentType: UnsafeRawBufferPointer) throws(MultipartError) {
        self.bytes = try Self.parse(contentType)
    }

    /// Whether a Content-Type value names `multipart/form-data` (the bodies `validate_multipart`
    /// checks), whatever its parameters. Nil, empty or malformed values are not.
    public static func isFormData(contentType: String?) -> Bool {
        guard var copy = contentType else { return false }
        return copy.withUTF8 { isFormData(contentType: UnsafeRawBufferPointer($0)) }
    }

    public static func isFormData(contentType: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < contentType.count && ByteClass.isWhitespace(contentType[i]) { i += 1 }
        let start = i
        while i < contentType.count && MultipartSyntax.isMediaTypeByte(contentType[i]) { i += 1 }
        let item = start..<i
        while i < contentType.count && ByteClass.isWhitespace(contentType[i]) { i += 1 }
        guard i == contentType.count || contentType[i] == ByteClass.semicolon else { return false }
        return MultipartSyntax.equalsIgnoringCase(contentType, item, "multipart/form-data")
    }

    private static func parse(_ contentType: UnsafeRawBufferPointer) throws(MultipartError) -> [UInt8] {
        guard isFormData(contentType: contentType) else { throw .notFormData }
        guard let value = MultipartSyntax.parameterized(contentType) else {
            throw .badBoundary("is in a malformed Content-Type parameter list")
        }
        guard let (boundary, repeated) = value.parameter("boundary", in: contentType) else { throw .noBoundary }
        guard !repeated else { throw .badBoundary("is given twice") }
        guard (1...maxLength).contains(boundary.count) else {
            throw .badBoundary("has \(boundary.count) characters, not 1 to \(maxLength)")
        }
        guard boundary.allSatisfy({ MultipartSyntax.isBcharNoSpace($0) || $0 == ByteClass.sp }) else {
            throw .badBoundary("has a character outside RFC 2046 bchars")
        }
        guard boundary.last != ByteClass.sp else { throw .badBoundary("ends with a space") }
        return boundary
    }
}
