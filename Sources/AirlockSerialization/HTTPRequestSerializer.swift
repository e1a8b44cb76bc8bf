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
public final class HTTPRequestSerializer: Sendable, Equatable {
    public let config: RequestSerializationConfig
    /// Lowercase names of client fields left out: removed, or replaced by an override.
    public let droppedNames: Set<String>
    /// The parameters, encoded once (`AFQueryStringFromParameters`).
    public let query: String
    /// `Authorization`'s value, when the route sets one.
    public let authorizationValue: String?

    public static func == (a: HTTPRequestSerializer, b: HTTPRequestSerializer) -> Bool { a.config == b.config }

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

    /// What becomes of the body of a request with `method`, decided from the head alone.
    /// `http`: parameters of a body method are a form body (merged into the client's form
    /// body, which is collected first). `json` / `plist`: the parameters (and a form body the
    /// client sent) become a JSON object / XML property list. `passthrough`: never touched.
    public func body(method: String, clientBodyEmpty: Bool) -> Body {
        if parametersInURI(method) { return .relay }
        switch config.serializer {
        case .passthrough:
            return .relay
        case .http:
            if clientBodyEmpty { return .replace(Replacement(Array(query.utf8), contentType: Self.formType, replacesClientType: false)) }
            return query.isEmpty ? .relay : .collect
        case .json, .plist:
            if !clientBodyEmpty { return .collect }
            if config.parameters.isEmpty { return .relay }
            return .replace(Replacement(encode(config.parameters), contentType: bodyType, replacesClientType: true))
        }
    }

    /// The body to send once a collected client body is whole. `clientContentType`: the
    /// client's `Content-Type` value, if any.
    public func transform(collected: [UInt8], clientContentType: String?, method: String) -> Body {
        let isForm = clientContentType.map { Self.mediaType($0) == Self.formType } ?? false
        switch config.serializer {
        case .passthrough:
            return .relay
        case .http:
            guard isForm else { return .refuse(.unmergeableBody(method: method, expected: Self.formType)) }
            do throws(RequestSerializationError) {
                let merged = ParameterValue.merge(client: try FormURLEncodedParsing.parse(collected), route: config.parameters)
                return .replace(Replacement(Array(QueryStringEncoding.encode(merged).utf8), contentType: Self.formType,
                                            replacesClientType: false))
            } catch {
                return .refuse(error)
            }
        case .json, .plist:
            if isForm {
                do throws(RequestSerializationError) {
                    let merged = ParameterValue.merge(client: try FormURLEncodedParsing.parse(collected), route: config.parameters)
                    return .replace(Replacement(encode(merged), contentType: bodyType, replacesClientType: true))
                } catch {
                    return .refuse(error)
                }
            }
            // Already in the route's own format and nothing to add: it goes up as it came.
            if config.parameters.isEmpty, let t = clientContentType, Self.mediaType(t) == bodyType {
                return .replace(Replacement(collected, contentType: bodyType, replacesClientType: true))
            }
            return .refuse(.unmergeableBody(method: method, expected: Self.formType))
        }
    }

    public enum Body: Sendable, Equatable {
        /// The client's body (or none) goes up as it is.
        case relay
        /// Read the client's whole body first, then ask `transform`.
        case collect
        /// This body replaces the client's.
        case replace(Replacement)
        /// The request cannot be serialized: 400 request-serialization-failed.
        case refuse(RequestSerializationError)
    }

    /// A body the serializer sends instead of the client's, with `Content-Length`;
    /// `contentType` is sent when no field names one, or always (the client's left out) when
    /// `replacesClientType`.
    public struct Replacement: Sendable, Equatable {
        public let bytes: [UInt8]
        public let contentType: String
        public let replacesClientType: Bool

        public init(_ bytes: [UInt8], contentType: String, replacesClientType: Bool) {
            self.bytes = bytes
            self.contentType = contentType
            self.replacesClientType = replacesClientType
        }
    }

    static let formType = "application/x-www-form-urlencoded"

    /// The `Content-Type` of a `json` / `plist` body (AFJSONRequestSerializer,
    /// AFPropertyListRequestSerializer).
    var bodyType: String { config.serializer == .plist ? "application/x-plist" : "application/json" }

    func encode(_ parameters: RequestParameters) -> [UInt8] {
        config.serializer == .plist ? PropertyListXMLEncoding.encode(parameters) : ParameterJSONEncoding.encode(parameters)
    }

    /// A `Content-Type` value's media type, lowercased, without parameters or spaces.
    static func mediaType(_ value: String) -> String {
        let head = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return lowercased(String(head).trimmingSpaces)
    }

    public static func lowercased(_ s: String) -> String {
        String(decoding: s.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var u = Substring(self)
        while let f = u.first, f == " " || f == "\t" { u = u.dropFirst() }
        while let l = u.last, l == " " || l == "\t" { u = u.dropLast() }
        return String(u)
    }
}
