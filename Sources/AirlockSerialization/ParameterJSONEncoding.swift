import AirlockWire

/// Writes parameters as JSON (RFC 8259), for a route whose request serializer is `json`
/// (`AFJSONRequestSerializer`): compact, with object keys sorted for stable output.
///
/// - Objects: keys in the order of `-[NSString compare:]` (as `NSJSONWritingSortedKeys` and the
///   query string use), no whitespace: `{"a":["1",null]}`.
/// - `null` → `null`; strings are UTF-8.
/// - String escapes (AirlockWire's `JSONString`, style `.document`): `"` and `\` escaped;
///   `\b \f \n \r \t` in their short forms; every other control character (U+0000…U+001F) as
///   `\u00XX` with lowercase hex. U+2028 and U+2029 are escaped too (`\u2028`, `\u2029`): valid
///   JSON either way, but escaped they are also safe inside JavaScript source. `/` and U+007F are written as they are (NSJSONSerialization writes `\/`
///   unless told not to; RFC 8259 does not ask for it).
public enum ParameterJSONEncoding {
    /// `value` as JSON text.
    public static func encode(_ value: ParameterValue) -> [UInt8] {
        var output: [UInt8] = []
        append(value, to: &output)
        return output
    }

    /// `parameters` as a JSON object.
    public static func encode(_ parameters: RequestParameters) -> [UInt8] {
        encode(.dictionary(parameters))
    }

    private static func append(_ value: ParameterValue, to output: inout [UInt8]) {
        switch value {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .string(let string):
            appendString(string, to: &output)
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                append(item, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .dictionary(let dictionary):
            output.append(UInt8(ascii: "{"))
            for (index, key) in ParameterValue.sortedKeys(dictionary).enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                appendString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                append(dictionary[key]!, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// `"string"`, escaped as `JSONString.Style.document` writes it.
    private static func appendString(_ string: String, to output: inout [UInt8]) {
        JSONString.appendQuoted(string, to: &output, style: .document)
    }
}
