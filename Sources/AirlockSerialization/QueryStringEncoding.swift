/// AFNetworking's `AFQueryStringFromParameters` and `AFPercentEscapedStringFromString`: the query
/// string (or `application/x-www-form-urlencoded` body) `AFHTTPRequestSerializer` writes for a
/// parameter tree, byte for byte.
///
/// - A dictionary becomes `key[sub]=v` for each entry, keys in `-[NSString compare:]` order
///   (case-sensitive, UTF-16 code units); an array becomes `key[]=v` for each element, in order;
///   nesting goes arbitrarily deep. Empty arrays and dictionaries write nothing.
/// - A `null` is the bare escaped key, with no `=`.
/// - Field (brackets included) and value are each escaped with `percentEscaped(_:)`; the pairs are
///   joined with `&`.
public enum QueryStringEncoding {
    /// The query string for `parameters`: `""` when there are none.
    ///
    /// `["key": "value", "key1": "value&"]` → `key=value&key1=value%26`;
    /// `["a": ["b": "1"]]` → `a%5Bb%5D=1`; `["a": ["1", "2"]]` → `a%5B%5D=1&a%5B%5D=2`.
    public static func encode(_ parameters: RequestParameters) -> String {
        var output: [UInt8] = []
        var pairs = 0
        for key in ParameterValue.sortedKeys(parameters) {
            appendPairs(field: Array(key.utf8), value: parameters[key]!, to: &output, pairs: &pairs)
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `AFPercentEscapedStringFromString`: every UTF-8 byte of `string` outside ALPHA, DIGIT and
    /// `-._~/?` becomes `%XX` (uppercase hex).
    ///
    /// AF starts from `URLQueryAllowedCharacterSet` (unreserved, sub-delims, `:@/?`) and removes
    /// `:#[]@!$&'()*+,;=`, which leaves exactly that set. A space is `%20`; an escape already in the
    /// input is escaped again (`%20` → `%2520`). AF escapes in batches of 50 UTF-16 units widened to
    /// whole composed character sequences, only so that it never splits a surrogate pair; since
    /// every allowed character is ASCII, escaping each scalar's UTF-8 bytes whole gives the same
    /// output however long the string.
    public static func percentEscaped(_ string: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(string.utf8.count)
        appendEscaped(string.utf8, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether AF leaves `byte` literal.
    @inline(__always)
    static func isLiteral(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
            UInt8(ascii: "/"), UInt8(ascii: "?"):
            true
        default:
            false
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static func appendEscaped(_ bytes: some Sequence<UInt8>, to output: inout [UInt8]) {
        for byte in bytes {
            if isLiteral(byte) {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    /// `AFQueryStringPairsFromKeyAndValue` with each pair's `URLEncodedStringValue` appended as it
    /// is found. `field` is the unescaped field so far (`a[b][]`); `pairs` counts the pairs written.
    private static func appendPairs(
        field: [UInt8], value: ParameterValue, to output: inout [UInt8], pairs: inout Int
    ) {
        switch value {
        case .dictionary(let dictionary):
            for key in ParameterValue.sortedKeys(dictionary) {
                let nested = field + [UInt8(ascii: "[")] + Array(key.utf8) + [UInt8(ascii: "]")]
                appendPairs(field: nested, value: dictionary[key]!, to: &output, pairs: &pairs)
            }
        case .array(let items):
            let nested = field + [UInt8(ascii: "["), UInt8(ascii: "]")]
            for item in items {
                appendPairs(field: nested, value: item, to: &output, pairs: &pairs)
            }
        case .null:
            separate(&output, pairs: &pairs)
            appendEscaped(field, to: &output)
        case .string(let string):
            separate(&output, pairs: &pairs)
            appendEscaped(field, to: &output)
            output.append(UInt8(ascii: "="))
            appendEscaped(string.utf8, to: &output)
        }
    }

    /// The `&` before every pair but the first (AF joins the pairs, so a first pair that escapes
    /// to nothing, a null under the key `""`, still gets its `&`).
    @inline(__always)
    private static func separate(_ output: inout [UInt8], pairs: inout Int) {
        if pairs > 0 { output.append(UInt8(ascii: "&")) }
        pairs += 1
    }
}
