/// The parameters of a request, as AFNetworking's request serializers take them: an
/// `NSDictionary` whose values are strings, `NSNull`, arrays and dictionaries, nested freely.
///
/// The top level of a request's parameters is always a dictionary, hence this alias.
public typealias RequestParameters = [String: ParameterValue]

/// One value in a parameter tree.
///
/// - `string`: a leaf value (AF writes any other leaf through its `description`, so a
///   number arrives here already as text);
/// - `null`: `NSNull`, a key without a value (`?flag` in a query string);
/// - `array`: an ordered list, written `key[]=v` in a query string;
/// - `dictionary`: nested keys, written `key[sub]=v`.
public indirect enum ParameterValue: Sendable, Hashable {
    case string(String)
    case null
    case array([ParameterValue])
    case dictionary([String: ParameterValue])
}

// MARK: - Merging route parameters with the client's

extension ParameterValue {
    /// Merges the parameters a route configures with those a client sent (its form body).
    ///
    /// The rule: start from the client's parameters, then lay the route's over them.
    /// - A key only one side has is kept as it is.
    /// - A key both sides hold as dictionaries is merged recursively by this same rule, so a route
    ///   can set `auth[token]` without dropping the client's `auth[user]`.
    /// - Any other key both sides have takes the route's value whole: the route wins, and arrays
    ///   are replaced, not concatenated (a route that pins `ids[]` pins the whole list).
    ///
    /// The route has the last word because it is the gateway's configuration: a client must not be
    /// able to override a value the operator fixed.
    public static func merge(client: RequestParameters, route: RequestParameters) -> RequestParameters {
        var merged = client
        for (key, routeValue) in route {
            if case .dictionary(let routeNested) = routeValue,
                case .dictionary(let clientNested)? = merged[key]
            {
                merged[key] = .dictionary(merge(client: clientNested, route: routeNested))
            } else {
                merged[key] = routeValue
            }
        }
        return merged
    }

    /// `self` (the client's value) with `route` laid over it, by the rule of `merge(client:route:)`.
    public func merging(route: ParameterValue) -> ParameterValue {
        if case .dictionary(let client) = self, case .dictionary(let routeNested) = route {
            return .dictionary(Self.merge(client: client, route: routeNested))
        }
        return route
    }
}

// MARK: - Key order shared by the encoders

extension ParameterValue {
    /// The order AF and Apple's writers give dictionary keys: `-[NSString compare:]` without
    /// options, which is case-sensitive and, for strings that are not canonically equivalent,
    /// orders by UTF-16 code units (so `"B" < "Z" < "a"`, and a key beyond the BMP sorts before
    /// U+E000…U+FFFF, unlike Swift's `<`).
    static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        var ia = a.utf16.makeIterator()
        var ib = b.utf16.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return false
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): if x != y { return x < y }
            }
        }
    }

    /// The keys of `dictionary` in `keyPrecedes` order.
    static func sortedKeys(_ dictionary: [String: ParameterValue]) -> [String] {
        dictionary.keys.sorted(by: keyPrecedes)
    }
}

// MARK: - Literals, for configuration defaults and tests

extension ParameterValue: ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: ParameterValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, ParameterValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension ParameterValue: CustomStringConvertible {
    /// A compact, stable rendering for test failures and logs: `{"a": ["1", null]}`.
    public var description: String {
        switch self {
        case .string(let s): "\"\(s)\""
        case .null: "null"
        case .array(let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d):
            "{" + Self.sortedKeys(d).map { "\"\($0)\": \(d[$0]!.description)" }.joined(separator: ", ") + "}"
        }
    }
}
