/// The `http` request serializer (AFHTTPRequestSerializer), as a route's `request:` block
/// applies it to a request's head: everything that can be decided once, when the
/// configuration loads, is computed here; per request it answers three questions (which
/// client fields to leave out, which to add, and where the parameters go).
///
/// Rules, as AFNetworking's:
/// - `remove_headers` and the names `override_headers` sets are left out of the client's fields;
/// - `headers` (and `authorization`, like AF's `setAuthorizationHeaderField…`) are added only
///   when the client did not send the field; `override_headers` always;
/// - parameters of a method in `parameters_in_uri` go to the query: appended with `?`, or `&`
///   when the target already has a query; empty parameters append nothing;
/// - for any other method they are the body, form-urlencoded, with
///   `Content-Type: application/x-www-form-urlencoded` unless the client set one; an empty
///   body is valid (AF issue #2864).
public struct HTTPRequestSerializer: Sendable, Equatable {
    public let config: RequestSerializationConfig
    /// Lowercase names of client fields left out: removed, or replaced by an override.
    public let droppedNames: Set<String>
    /// The parameters, encoded once (`AFQueryStringFromParameters`).
    public let query: String
    /// `Authorization`'s value, when the route sets one.
    public let authorizationValue: String?

    public init(config: RequestSerializationConfig) {
        self.config = config
        var dropped = Set(config.removeHeaders)
        for f in config.overrideHeaders { dropped.insert(Self.lowercased(f.name)) }
        droppedNames = dropped
        query = QueryStringEncoding.encode(config.parameters)
        authorizationValue = config.authorizationHeaderValue
    }

    /// Whether the client's field named `lowercasedName` is left out of the forwarded head.
    public func drops(_ lowercasedName: String) -> Bool { droppedNames.contains(lowercasedName) }

    /// The fields the serializer adds after the client's, in order: `headers` the client did not
    /// send, `Authorization` if the client sent none, then every `override_headers` field.
    /// `clientSent` answers for a lowercase name.
    public func addedFields(clientSent: (String) -> Bool) -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        for f in config.headers where !clientSent(Self.lowercased(f.name)) { out.append((f.name, f.value)) }
        if let authorizationValue, !clientSent("authorization") { out.append(("Authorization", authorizationValue)) }
        for f in config.overrideHeaders { out.append((f.name, f.value)) }
        return out
    }

    /// Whether `method`'s parameters go to the query (a `passthrough` route's always do: its
    /// body is never touched).
    public func parametersInURI(_ method: String) -> Bool {
        config.serializer == .passthrough || config.parametersInURI.contains(method)
    }

    /// `target` (origin-form) with the parameters appended, or nil when it is unchanged (a body
    /// method, or no parameters).
    public func target(_ target: String, method: String) -> String? {
        guard parametersInURI(method), !query.isEmpty else { return nil }
        return target + (target.utf8.contains(UInt8(ascii: "?")) ? "&" : "?") + query
    }

    /// What becomes of the body of a request with `method`.
    public func body(method: String, clientBodyEmpty: Bool) -> Body {
        if parametersInURI(method) { return .relay }
        if clientBodyEmpty { return .form(Array(query.utf8)) }
        // Merging route parameters into a body the client sent needs the whole body first: not
        // built yet. With no route parameters the client's body is relayed as it is.
        return query.isEmpty ? .relay : .refuse(.clientBodyWithParameters(method: method))
    }

    public enum Body: Sendable, Equatable {
        /// The client's body (or none) goes up as it is.
        case relay
        /// This form-urlencoded body replaces the client's empty one.
        case form([UInt8])
        /// The request cannot be serialized: 400 request-serialization-failed.
        case refuse(RequestSerializationError)
    }

    public static func lowercased(_ s: String) -> String {
        String(decoding: s.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }
}
