/// Size limits applied while reading a message head.
///
/// Each limit maps to the status a client sees when it is exceeded:
/// `requestLineBytes` → 414, `headerBytes` and `headerCount` → 431.
public struct WireLimits: Sendable, Equatable {
    /// Longest request line accepted, not counting its CRLF. Longer → 414.
    public var requestLineBytes: Int
    /// Largest whole head accepted (leading CRLF, start line, fields, final CRLF). Larger → 431.
    public var headerBytes: Int
    /// Most field lines accepted. More → 431.
    public var headerCount: Int

    public init(requestLineBytes: Int = 8192, headerBytes: Int = 65536, headerCount: Int = 100) {
        self.requestLineBytes = requestLineBytes
        self.headerBytes = headerBytes
        self.headerCount = headerCount
    }
}
