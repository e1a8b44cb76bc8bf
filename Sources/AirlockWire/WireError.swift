/// The one error type of `AirlockWire`.
///
/// `code` is stable and bounded (fit for a metric label or a log field); `detail` is short human
/// text that may quote a few sanitised bytes of the offending input, never more than ~48 bytes.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case requestLineTooLong = "request-line-too-long"
        case headersTooLarge = "headers-too-large"
        case tooManyHeaders = "too-many-headers"
        case incompleteHead = "incomplete-head"
        case badRequestLine = "bad-request-line"
        case badMethod = "bad-method"
        case badTarget = "bad-target"
        /// A CONNECT request-target that is not `host:port` (RFC 9110 9.3.6): no port, port 0 or
        /// over 65535, userinfo, a path or query, an unbracketed IPv6 address, an empty host.
        case invalidConnectTarget = "invalid-connect-target"
        case badVersion = "bad-version"
        case unsupportedVersion = "unsupported-version"
        case badHeaderName = "bad-header-name"
        case badHeaderValue = "bad-header-value"
        case obsFold = "obs-fold"
        case whitespaceBeforeColon = "whitespace-before-colon"
        case missingColon = "missing-colon"
        case bareCR = "bare-cr"
        case bareLF = "bare-lf"
        case missingHost = "missing-host"
        case duplicateHost = "duplicate-host"
        case badHost = "bad-host"
        /// A host that a browser or curl reads as an IPv4 address (its last label is a number:
        /// `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`) but that is not four plain decimal
        /// parts. Refused rather than sent to DNS or read one way here and another there.
        case invalidHost = "invalid-host"
        case badContentLength = "bad-content-length"
        case conflictingFraming = "conflicting-framing"
        case unsupportedTransferCoding = "unsupported-transfer-coding"
        case transferEncodingInHTTP10 = "transfer-encoding-in-http10"
        case badChunk = "bad-chunk"
        case bodyTruncated = "body-truncated"
        case bodyTooLarge = "body-too-large"
        case badStatusLine = "bad-status-line"
        case badTrailer = "bad-trailer"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The status to send a client whose REQUEST caused this error. (Errors in upstream
    /// responses are the gateway's to map, normally to 502.)
    public var status: Int {
        switch code {
        case .requestLineTooLong: 414
        case .headersTooLarge, .tooManyHeaders: 431
        case .unsupportedVersion: 505
        case .unsupportedTransferCoding: 501
        case .bodyTooLarge: 413
        default: 400
        }
    }

    public var reason: String { code.rawValue }

    public var description: String { detail.isEmpty ? code.rawValue : "\(code.rawValue): \(detail)" }
}

extension WireError {
    /// Longest run of input bytes quoted in a `detail`.
    static let quoteLimit = 40

    /// Builds an error whose detail is `prefix` followed by the sanitised `bytes`.
    static func quoting(_ code: Code, _ prefix: String, _ bytes: UnsafeRawBufferPointer) -> WireError {
        WireError(code, prefix + quote(bytes))
    }

    /// Printable ASCII kept, everything else as `\xHH`, cut after `quoteLimit` bytes.
    static func quote(_ bytes: UnsafeRawBufferPointer) -> String {
        var out = ""
        out.reserveCapacity(min(bytes.count, quoteLimit) + 2)
        for (n, b) in bytes.enumerated() {
            if n == quoteLimit {
                out += "..."
                break
            }
            if b >= 0x20 && b < 0x7F && b != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "\\x" + hex2(b)
            }
        }
        return out
    }

    private static func hex2(_ b: UInt8) -> String {
        let digits: StaticString = "0123456789ABCDEF"
        let p = digits.utf8Start
        var s = ""
        s.unicodeScalars.append(Unicode.Scalar(p[Int(b >> 4)]))
        s.unicodeScalars.append(Unicode.Scalar(p[Int(b & 0xF)]))
        return s
    }
}
