/// Reads an `application/x-www-form-urlencoded` body into parameters: the inverse of
/// `QueryStringEncoding` for the trees it writes, with the nested-key rules of Rack and PHP.
///
/// - Pairs are separated by `&`; empty pairs (`a=1&&b=2`, a trailing `&`) are skipped.
/// - Key and value are split at the first `=`; `+` is a space, `%XX` a byte (two hex digits of
///   either case). A `%` without two hex digits, or a key or value that is not UTF-8 once decoded,
///   is `invalid-form-body`.
/// - A key without `=` is `null`; `k=` is the empty string.
/// - The key is decoded first, then read as `name[seg][seg]…` (so `a%5Bb%5D`, AF's spelling, nests
///   like `a[b]`): `[x]` is a dictionary key, `[]` appends to an array. A key that is not exactly
///   that shape (`[a]`, `a[b`, `a[b]c`, `a[[b]]`) is taken literally as one flat key.
/// - `a[]=1&a[]=2` → `["1", "2"]`. After `[]` with more segments (`a[][b]=1`), the value goes
///   into the array's last element when it fits there without replacing a value, otherwise into a
///   new element: `a[][b]=1&a[][c]=2&a[][b]=3` → `[{b:1, c:2}, {b:3}]`, as AF writes that list.
/// - The same key twice with a plain value: the last one wins (`a=1&a=2` → `"2"`).
/// - The same key with two shapes (`a=1&a[b]=2`, `a[b]=1&a=2`, `a[]=1&a[b]=2`) is
///   `conflicting-form-keys`.
/// - Bounded: more than `Limits.maxPairs` pairs is `form-too-many-pairs`, a key with more than
///   `Limits.maxDepth` bracket segments is `form-too-deep`.
public enum FormURLEncodedParsing {
    public struct Limits: Sendable, Equatable {
        /// Most `key=value` pairs a body may hold.
        public var maxPairs: Int
        /// Most bracket segments a key may have: `a[b][c]` has 2.
        public var maxDepth: Int

        public init(maxPairs: Int = 1_000, maxDepth: Int = 32) {
            self.maxPairs = maxPairs
            self.maxDepth = maxDepth
        }
    }

    public static func parse(_ body: [UInt8], limits: Limits = Limits()) throws(RequestSerializationError)
        -> RequestParameters
    {
        // `withUnsafeBytes` rethrows untyped: carry the typed error out in a Result.
        let result = body.withUnsafeBytes { raw in
            Result { () throws(RequestSerializationError) in try parse(raw, limits: limits) }
        }
        return try result.get()
    }

    public static func parse(_ body: UnsafeRawBufferPointer, limits: Limits = Limits())
        throws(RequestSerializationError) -> RequestParameters
    {
        var parameters: RequestParameters = [:]
        var pairs = 0
        var start = 0
        while start < body.count {
            var end = start
            while end < body.count && body[end] != UInt8(ascii: "&") { end += 1 }
            if end > start {
                pairs += 1
                guard pairs <= limits.maxPairs else { throw .tooManyPairs(limit: limits.maxPairs) }
                try parsePair(body, start, end, limits: limits, into: &parameters)
            }
            start = end + 1
        }
        return parameters
    }

    /// One `key[=value]` in `body[start..<end]`.
    private static func parsePair(
        _ body: UnsafeRawBufferPointer, _ start: Int, _ end: Int, limits: Limits,
        into parameters: inout RequestParameters
    ) throws(RequestSerializationError) {
        var equals = start
        while equals < end && body[equals] != UInt8(ascii: "=") { equals += 1 }
        let key = try decode(body, start, equals)
        let value: ParameterValue = equals < end ? .string(try decode(body, equals + 1, end)) : .null

        let (name, path) = keyPath(key)
        guard path.count <= limits.maxDepth else { throw .tooDeep(key, limit: limits.maxDepth) }
        var slot = parameters.removeValue(forKey: name)
        try assign(value, at: path[...], into: &slot, key: key)
        parameters[name] = slot
    }

    // MARK: - Decoding

    /// `body[start..<end]` with `+` as space and `%XX` escapes decoded, as UTF-8.
    private static func decode(_ body: UnsafeRawBufferPointer, _ start: Int, _ end: Int)
        throws(RequestSerializationError) -> String
    {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(end - start)
        var i = start
        while i < end {
            let byte = body[i]
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
                i += 1
            case UInt8(ascii: "%"):
                guard i + 2 < end, let high = hexValue(body[i + 1]), let low = hexValue(body[i + 2]) else {
                    throw .invalidEscape(at: i)
                }
                bytes.append(high << 4 | low)
                i += 3
            default:
                bytes.append(byte)
                i += 1
            }
        }
        guard isValidUTF8(bytes) else { throw .invalidUTF8(at: start) }
        return String(decoding: bytes, as: UTF8.self)
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    // MARK: - Nested keys

    private enum Segment {
        case key(String)  // [x]
        case append       // []
    }

    /// `a[b][]` → ("a", [.key("b"), .append]); a key not of that shape is one flat name.
    private static func keyPath(_ key: String) -> (name: String, path: [Segment]) {
        let utf8 = Array(key.utf8)
        guard let open = utf8.firstIndex(of: UInt8(ascii: "[")), open > 0 else { return (key, []) }
        var path: [Segment] = []
        var i = open
        while i < utf8.count {
            guard utf8[i] == UInt8(ascii: "[") else { return (key, []) }
            var close = i + 1
            while close < utf8.count && utf8[close] != UInt8(ascii: "]") {
                if utf8[close] == UInt8(ascii: "[") { return (key, []) }
                close += 1
            }
            guard close < utf8.count else { return (key, []) }
            path.append(close == i + 1 ? .append : .key(String(decoding: utf8[(i + 1)..<close], as: UTF8.self)))
            i = close + 1
        }
        return (String(decoding: utf8[..<open], as: UTF8.self), path)
    }

    /// Puts `value` at `path` under `slot`, creating containers as needed.
    private static func assign(
        _ value: ParameterValue, at path: ArraySlice<Segment>, into slot: inout ParameterValue?, key: String
    ) throws(RequestSerializationError) {
        guard let first = path.first else {
            switch slot {
            case nil, .string?, .null?: slot = value  // the last plain value wins
            case .array?, .dictionary?: throw .conflictingKey(key)
            }
            return
        }
        let rest = path.dropFirst()
        switch (first, slot) {
        case (.key(let name), nil):
            var nested: ParameterValue? = nil
            try assign(value, at: rest, into: &nested, key: key)
            slot = .dictionary([name: nested!])
        case (.key(let name), .dictionary(var dictionary)?):
            slot = nil  // keeps `dictionary` uniquely referenced
            var nested = dictionary.removeValue(forKey: name)
            try assign(value, at: rest, into: &nested, key: key)
            dictionary[name] = nested
            slot = .dictionary(dictionary)
        case (.append, nil):
            var element: ParameterValue? = nil
            try assign(value, at: rest, into: &element, key: key)
            slot = .array([element!])
        case (.append, .array(var items)?):
            slot = nil
            if !rest.isEmpty, let last = items.last, fits(rest, in: last) {
                var element: ParameterValue? = items.removeLast()
                try assign(value, at: rest, into: &element, key: key)
                items.append(element!)
            } else {
                var element: ParameterValue? = nil
                try assign(value, at: rest, into: &element, key: key)
                items.append(element!)
            }
            slot = .array(items)
        case (.key, _), (.append, _):
            throw .conflictingKey(key)
        }
    }

    /// Whether a value at `path` under `value` would neither replace a value nor clash with a shape.
    private static func fits(_ path: ArraySlice<Segment>, in value: ParameterValue?) -> Bool {
        guard let first = path.first else { return value == nil }
        switch (first, value) {
        case (_, nil): return true
        case (.key(let name), .dictionary(let dictionary)?): return fits(path.dropFirst(), in: dictionary[name])
        case (.append, .array?): return true
        default: return false
        }
    }
}
