/// Scalar syntaxes shared by the configuration file and the command line:
/// durations (`500ms`, `10s`, `2m`, `1h`, bare integer = seconds) and byte
/// sizes (`65536`, `64KiB`, `1MiB`, `1GiB`).
public enum ConfigSyntax {
    /// Parses a duration. Returns nil on bad syntax or overflow; zero is
    /// syntactically valid (the range check happens in validation).
    public static func parseDuration(_ text: String) -> Duration? {
        let (digits, unit) = splitNumber(text)
        guard let value = Int64(digits) else { return nil }
        let millisecondsPerUnit: Int64
        switch unit {
        case "ms": millisecondsPerUnit = 1
        case "", "s": millisecondsPerUnit = 1_000
        case "m": millisecondsPerUnit = 60_000
        case "h": millisecondsPerUnit = 3_600_000
        default: return nil
        }
        let (ms, overflow) = value.multipliedReportingOverflow(by: millisecondsPerUnit)
        guard !overflow, ms <= maxMilliseconds else { return nil }
        return .milliseconds(ms)
    }

    /// Renders a duration exactly: whole hours as `h`, whole minutes from 5m
    /// as `m`, then seconds, then milliseconds (`60s` stays `60s`).
    /// Sub-millisecond remainders round up to the next millisecond.
    static func formatDuration(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        var ms = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        if attoseconds % 1_000_000_000_000_000 > 0 { ms += 1 }
        if ms > 0, ms % 3_600_000 == 0 { return "\(ms / 3_600_000)h" }
        if ms >= 300_000, ms % 60_000 == 0 { return "\(ms / 60_000)m" }
        if ms % 1_000 == 0 { return "\(ms / 1_000)s" }
        return "\(ms)ms"
    }

    /// Parses a byte size. Returns nil on bad syntax or overflow.
    static func parseSize(_ text: String) -> Int64? {
        let (digits, unit) = splitNumber(text)
        guard let value = Int64(digits) else { return nil }
        let multiplier: Int64
        switch unit {
        case "": multiplier = 1
        case "KiB": multiplier = 1 << 10
        case "MiB": multiplier = 1 << 20
        case "GiB": multiplier = 1 << 30
        default: return nil
        }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    /// Parses a plain non-negative decimal count (no sign, no unit).
    static func parseCount(_ text: String) -> Int? {
        let (digits, unit) = splitNumber(text)
        guard unit.isEmpty else { return nil }
        return Int(digits)
    }

    /// Durations above this fail to parse: 100 days is far past any sane
    /// timeout and keeps every value clear of timeval/Int overflow downstream.
    static let maxMilliseconds: Int64 = 100 * 24 * 3_600_000

    /// Splits "123abc" into ("123", "abc"). Digits must be ASCII and non-empty
    /// for the caller's integer conversion to succeed; signs are rejected.
    private static func splitNumber(_ text: String) -> (digits: Substring, unit: Substring) {
        let firstNonDigit = text.firstIndex { !("0"..."9").contains($0) } ?? text.endIndex
        return (text[..<firstNonDigit], text[firstNonDigit...])
    }
}
