/// The `serializer:` of a route's `response:` block.
public enum SerializerKind: String, Sendable, CaseIterable {
    case http, json, xml, image, plist, compound

    /// The content types the serializer accepts when the route names none; nil accepts any.
    public var defaultContentTypes: Set<String>? {
        switch self {
        case .http, .compound: nil
        case .json: JSONResponseValidator.defaultContentTypes
        case .xml: XMLResponseValidator.defaultContentTypes
        case .image: ImageResponseValidator.defaultContentTypes
        case .plist: PropertyListResponseValidator.defaultContentTypes
        }
    }
}
