#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import AirlockWire
import Logging

/// Builds one JSON log line as UTF-8 bytes, by hand: no JSONEncoder, no
/// Foundation formatters on the per-record path.
struct JSONLineEncoder {
    /// The line so far (a `LogBuffer` lends its own bytes, so records are encoded in place).
    var bytes: [UInt8] = []
    /// The current second, formatted (a `LogBuffer` lends its own, kept across records).
    var timestamps = TimestampCache()

    init() {
        bytes.reserveCapacity(256)
    }

    /// Starts from `bytes` (appends after them).
    init(appendingTo bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// `"text"` escaped for a log line (`JSONString.Style.log`): `"` and `\` escaped, control
    /// characters (and DEL, U+2028, U+2029) as `\u00XX`/`\u20XX`. Swift strings are valid
    /// Unicode, so everything else is copied through as valid UTF-8.
    mutating func appendString(_ text: String) {
        JSONString.appendQuoted(text, to: &bytes, style: .log)
    }

    /// `text` escaped as in `appendString`, without the quotes.
    mutating func appendStringContents(_ text: String) {
        JSONString.appendEscaped(text, to: &bytes, style: .log)
    }

    /// An integer in decimal, as `String(describing:)` writes it, without a String.
    mutating func appendInteger<T: BinaryInteger>(_ value: T) {
        TextBuilder.withBytes(capacity: 24, { $0.append(decimal: value) }) { bytes.append(contentsOf: $0) }
    }


    /// A metadata value: strings as strings; Int/Double/Bool held in
    /// `.stringConvertible` as JSON numbers and booleans; dictionaries and
    /// arrays as nested JSON (dictionary keys sorted for stable output).
    mutating func appendValue(_ value: Logger.MetadataValue) {
        switch value {
        case .string(let text):
            appendString(text)
        case .stringConvertible(let convertible):
            appendConvertible(convertible)
        case .dictionary(let dictionary):
            appendObjectBody(dictionary)
        case .array(let array):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                appendValue(element)
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }

    /// `{"k":v,...}` with keys sorted.
    mutating func appendObjectBody(_ dictionary: Logger.Metadata) {
        bytes.append(UInt8(ascii: "{"))
        for (index, key) in dictionary.keys.sorted().enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(key)
            bytes.append(UInt8(ascii: ":"))
            appendValue(dictionary[key]!)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func appendConvertible(_ value: any CustomStringConvertible & Sendable) {
        switch value {
        case let flag as Bool:
            flag ? append("true") : append("false")
        case let integer as any BinaryInteger:
            appendInteger(integer)
        case let number as Double:
            appendFloatingPoint(number)
        case let number as Float:
            appendFloatingPoint(Double(number))
        default:
            appendString(value.description)
        }
    }

    /// Finite values as JSON numbers; NaN and infinities, which JSON cannot
    /// express, as strings.
    mutating func appendFloatingPoint(_ number: Double) {
        if number.isFinite {
            bytes.append(contentsOf: number.description.utf8)
        } else {
            appendString(number.description)
        }
    }

    /// `"2026-11-22T10:00:00.123Z"`, from clock_gettime, and gmtime_r once per second
    /// (`timestamps` keeps the second's text).
    mutating func appendTimestamp() {
        let now = currentTime()
        bytes.append(contentsOf: now.second)
        appendDigits(now.milliseconds, width: 3)
        append("Z\"")
    }

    /// Now: the current second's text (`"2026-11-22T10:00:00.`, from `timestamps`, formatted
    /// with gmtime_r once per second) and the milliseconds into it.
    mutating func currentTime() -> (second: [UInt8], milliseconds: Int) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        if now.tv_sec != timestamps.second {
            var e = JSONLineEncoder(appendingTo: [])
            e.appendTimestamp(seconds: now.tv_sec, milliseconds: 0)
            timestamps.second = now.tv_sec
            timestamps.text = Array(e.bytes.dropLast(5))  // without `000Z"`
        }
        return (timestamps.text, Int(now.tv_nsec / 1_000_000))
    }

    mutating func appendTimestamp(seconds: time_t, milliseconds: Int) {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        bytes.append(UInt8(ascii: "\""))
        appendDigits(Int(parts.tm_year) + 1900, width: 4)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mon) + 1, width: 2)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mday), width: 2)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(Int(parts.tm_hour), width: 2)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_min), width: 2)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_sec), width: 2)
        bytes.append(UInt8(ascii: "."))
        appendDigits(milliseconds, width: 3)
        append("Z\"")
    }

    /// Zero-padded decimal of a non-negative value.
    private mutating func appendDigits(_ value: Int, width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var value = value
        if value >= divisor * 10 {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
            value %= divisor
            divisor /= 10
        }
    }
}

/// What a `LogBuffer` keeps across the records it encodes: the text of one second,
/// `"2026-11-22T10:00:00.`, for the records written in it, and the memory an access record is
/// written in before it joins the line (`AccessRecord.encode`).
struct TimestampCache {
    fileprivate var second: time_t = -1
    fileprivate var text: [UInt8] = []
    var scratch: [UInt8] = []
}
