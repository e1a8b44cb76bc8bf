/// The two HTTP versions Airlock speaks on the wire.
public enum HTTPVersion: Sendable, Equatable {
    case http10
    case http11

    /// "HTTP/1.0" or "HTTP/1.1".
    public var text: String {
        switch self {
        case .http10: "HTTP/1.0"
        case .http11: "HTTP/1.1"
        }
    }

    /// Parses exactly `HTTP/DIGIT.DIGIT`. A well-formed version other than 1.0/1.1 is
    /// `unsupportedVersion` (505); anything else is `badVersion` (400).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> HTTPVersion {
        guard bytes.count == 8,
              bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"),
              bytes[2] == UInt8(ascii: "T"), bytes[3] == UInt8(ascii: "P"),
              bytes[4] == UInt8(ascii: "/"), ByteClass.isDigit(bytes[5]),
              bytes[6] == UInt8(ascii: "."), ByteClass.isDigit(bytes[7])
        else {
            throw WireError.quoting(.badVersion, "version: ", bytes)
        }
        switch (bytes[5], bytes[7]) {
        case (UInt8(ascii: "1"), UInt8(ascii: "1")): return .http11
        case (UInt8(ascii: "1"), UInt8(ascii: "0")): return .http10
        default: throw WireError.quoting(.unsupportedVersion, "version: ", bytes)
        }
    }
}
