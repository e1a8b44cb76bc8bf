/// The `serializer:` of a route's `request:` block: how the request's parameters are written
/// (AFNetworking's request serializer classes).
public enum RequestSerializerKind: String, Sendable, CaseIterable {
    /// `AFHTTPRequestSerializer`: a query string, or a form body for methods outside
    /// `parameters_in_uri`.
    case http
    /// `AFJSONRequestSerializer`: a JSON body for methods outside `parameters_in_uri`.
    case json
    /// `AFPropertyListRequestSerializer`: an XML property list body likewise.
    case plist
    /// The client's body is relayed untouched; route parameters go to the query only.
    case passthrough
}
