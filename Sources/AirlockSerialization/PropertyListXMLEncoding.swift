/// Writes parameters as an XML property list exactly as Apple's `CFPropertyListCreateData`
/// (`NSPropertyListXMLFormat_v1_0`) writes one, for a route whose request serializer is `plist`
/// (`AFPropertyListRequestSerializer`):
///
///     <?xml version="1.0" encoding="UTF-8"?>
///     <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
///     <plist version="1.0">
///     <dict>
///     	<key>a</key>
///     	<array>
///     		<string>1</string>
///     	</array>
///     </dict>
///     </plist>
///
/// - One element per line, indented by one tab per level below `<plist>`; a newline after
///   `</plist>`.
/// - Dictionary keys in `-[NSString compare:]` order (CF sorts them with `CFStringCompare`).
/// - Empty containers are `<array/>` and `<dict/>`; an empty string is `<string></string>`.
/// - Text escapes only `&`, `<` and `>` (`&amp;` `&lt;` `&gt;`), as CF does; quotes stay.
///   Like CF, control characters are written raw: XML 1.0 cannot carry them (a strict parser
///   rejects them), and a parser reads a lone `\r` back as `\n`.
/// - `null` has no property-list form (`NSPropertyListSerialization` refuses `NSNull`, so AF's
///   serializer fails the request). Here it is written as an empty string, `<string></string>`,
///   so the key survives; a reader gets `""` back.
public enum PropertyListXMLEncoding {
    public static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    /// `value` as an XML property list document.
    public static func encode(_ value: ParameterValue) -> [UInt8] {
        var output = Array(header.utf8)
        append(value, depth: 0, to: &output)
        output.append(contentsOf: "</plist>\n".utf8)
        return output
    }

    /// `parameters` as an XML property list whose root is a `<dict>`.
    public static func encode(_ parameters: RequestParameters) -> [UInt8] {
        encode(.dictionary(parameters))
    }

    private static func append(_ value: ParameterValue, depth: Int, to output: inout [UInt8]) {
        indent(depth, &output)
        switch value {
        case .null:
            output.append(contentsOf: "<string></string>\n".utf8)
        case .string(let string):
            output.append(contentsOf: "<string>".utf8)
            appendEscaped(string, to: &output)
            output.append(contentsOf: "</string>\n".utf8)
        case .array(let items):
            guard !items.isEmpty else {
                output.append(contentsOf: "<array/>\n".utf8)
                return
            }
            output.append(contentsOf: "<array>\n".utf8)
            for item in items { append(item, depth: depth + 1, to: &output) }
            indent(depth, &output)
            output.append(contentsOf: "</array>\n".utf8)
        case .dictionary(let dictionary):
            guard !dictionary.isEmpty else {
                output.append(contentsOf: "<dict/>\n".utf8)
                return
            }
            output.append(contentsOf: "<dict>\n".utf8)
            for key in ParameterValue.sortedKeys(dictionary) {
                indent(depth + 1, &output)
                output.append(contentsOf: "<key>".utf8)
                appendEscaped(key, to: &output)
                output.append(contentsOf: "</key>\n".utf8)
                append(dictionary[key]!, depth: depth + 1, to: &output)
            }
            indent(depth, &output)
            output.append(contentsOf: "</dict>\n".utf8)
        }
    }

    @inline(__always)
    private static func indent(_ depth: Int, _ output: inout [UInt8]) {
        for _ in 0..<depth { output.append(UInt8(ascii: "\t")) }
    }

    private static func appendEscaped(_ text: String, to output: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): output.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): output.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): output.append(contentsOf: "&gt;".utf8)
            default: output.append(byte)
            }
        }
    }
}
