/// The HTTP checks, then a body that starts with a known image signature
/// (AFNetworking's `AFImageResponseSerializer`, without decoding the pixels).
public struct ImageResponseValidator: BodyResponseValidator {
    /// AFNetworking's list: TIFF, JPEG, GIF, PNG, ICO and the BMP variants.
    public static let defaultContentTypes: Set<String> = [
        "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon",
        "image/bmp", "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap",
    ]

    public var base: HTTPResponseValidator

    public init(base: HTTPResponseValidator = HTTPResponseValidator(acceptableContentTypes: defaultContentTypes)) {
        self.base = base
    }

    /// An empty body is not an image and is rejected.
    public func validate(head: ResponseFacts, body: [UInt8]) -> ValidationResult {
        if let error = base.headError(head, bodyIsEmpty: body.isEmpty) { return .rejected(error) }
        guard body.withUnsafeBytes({ ImageSignature.matches($0) }) else {
            return .rejected(.invalidImage(url: head.url))
        }
        return .accepted(body: nil)
    }
}
