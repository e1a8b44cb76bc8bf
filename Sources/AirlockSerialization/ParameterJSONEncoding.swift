/// Writes parameters as JSON (RFC 8259), for a route whose request serializer is `json`
/// (`AFJSONRequestSerializer`): compact, with object keys sorted for stable output.
///
/// - Objects: keys in the order of `-[NSString compare:]` (as `NSJSONWritingSortedKeys` and the
///   query string use), no whitespace: `{"a":["1",null]}`.
/// - `null` → `null`; strings are UTF-8.
/// - String escapes: `"` and `\` escaped; `\b \f \n \r \t` in their short forms; every other
///   control character (U+0000…U+001F) as `\u00XX` with lowercase hex. U+2028 and U+2029 are
///   escaped too (`\u2028`, `\u2029`): valid JSON either way, but escaped they are also safe inside
///   JavaScript source. `/` and U+007F are written as they are (NSJSONSerialization writes `\/`
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

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func appendString(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        let utf8 = string.utf8
        var i = utf8.startIndex
        while i != utf8.endIndex {
            let byte = utf8[i]
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                output.append(contentsOf: "\\u00".utf8)
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            case 0xE2:
                // U+2028 is E2 80 A8, U+2029 is E2 80 A9.
                let next = utf8.index(after: i)
                if next != utf8.endIndex, utf8[next] == 0x80, utf8.index(after: next) != utf8.endIndex {
                    let last = utf8[utf8.index(after: next)]
                    if last == 0xA8 || last == 0xA9 {
                        output.append(contentsOf: (last == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                        i = utf8.index(i, offsetBy: 3)
                        continue
                    }
                }
                output.append(byte)
            default:
                output.append(byte)
            }
            i = utf8.index(after: i)
        }
        output.append(UInt8(ascii: "\""))
    }
}
