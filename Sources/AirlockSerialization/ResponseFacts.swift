/// What the gateway knows about an upstream response once its head has arrived.
public struct ResponseFacts: Sendable {
    public var status: Int
    /// The raw Content-Type field value; may carry parameters.
    public var contentType: String?
    /// The request URL, for messages.
    public var url: String
    /// True or false when the framing tells (Content-Length, 204, 304, HEAD);
    /// nil when not yet known (chunked or close-delimited).
    public var bodyIsEmpty: Bool?

    public init(status: Int, contentType: String?, url: String, bodyIsEmpty: Bool?) {
        self.status = status
        self.contentType = contentType
        self.url = url
        self.bodyIsEmpty = bodyIsEmpty
    }

    /// `type/subtype`, lowercased, with parameters and whitespace stripped; nil without a
    /// Content-Type or when nothing precedes the first `;`.
    public var mimeType: String? {
        guard var contentType else { return nil }
        return contentType.withUTF8 { Self.mimeType(of: UnsafeRawBufferPointer($0)) }
    }

    static func mimeType(of value: UnsafeRawBufferPointer) -> String? {
        var start = 0
        var end = value.count
        for i in 0..<value.count where value[i] == UInt8(ascii: ";") {
            end = i
            break
        }
        while start < end, value[start] == 0x20 || value[start] == 0x09 { start += 1 }
        while end > start, value[end - 1] == 0x20 || value[end - 1] == 0x09 { end -= 1 }
        guard end > start else { return nil }
        return String(unsafeUninitializedCapacity: end - start) { out in
            for i in start..<end {
                let b = value[i]
                out[i - start] = b >= 0x41 && b <= 0x5A ? b | 0x20 : b
            }
            return end - start
        }
    }
}
