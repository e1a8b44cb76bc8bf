/// The status codes a route accepts from its upstream (AFNetworking's `acceptableStatusCodes`).
///
/// Stored as sorted, merged ranges, so two sets holding the same codes compare equal
/// however they were written.
public struct StatusCodeSet: Sendable, Equatable, CustomStringConvertible {
    /// 200-299, AFNetworking's default.
    public static let success = StatusCodeSet(ranges: [200...299])

    /// The codes allowed in configuration.
    public static let configurableCodes = 100...599

    /// Sorted, non-overlapping, non-adjacent ranges.
    public private(set) var ranges: [ClosedRange<Int>]

    public init(ranges: [ClosedRange<Int>]) {
        self.ranges = Self.merged(ranges)
    }

    /// Parses config entries: integers (`404`) or strings (`"200-299"`, `"304"`), codes within 100...599.
    /// Errors name the entry: `acceptable_status_codes[2]`.
    public init(parsing entries: [String]) throws(ValidationConfigError) {
        guard !entries.isEmpty else {
            throw ValidationConfigError(
                key: "acceptable_status_codes", message: "must list at least one status code or range")
        }
        var ranges: [ClosedRange<Int>] = []
        ranges.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            ranges.append(try Self.parseEntry(entry, key: "acceptable_status_codes[\(index)]"))
        }
        self.init(ranges: ranges)
    }

    public func contains(_ status: Int) -> Bool {
        for range in ranges {
            if status < range.lowerBound { return false }
            if status <= range.upperBound { return true }
        }
        return false
    }

    /// "200-299, 304".
    public var description: String {
        ranges.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            .joined(separator: ", ")
    }

    private static func merged(_ ranges: [ClosedRange<Int>]) -> [ClosedRange<Int>] {
        var result: [ClosedRange<Int>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound + 1 {
                result[result.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    private static func parseEntry(_ entry: String, key: String) throws(ValidationConfigError) -> ClosedRange<Int> {
        let bytes = Array(entry.utf8)
        let shape = "'\(entry)' is not a status code or a range like 200-299"
        guard let dash = bytes.firstIndex(of: UInt8(ascii: "-")) else {
            guard let code = parseCode(bytes[...]) else { throw ValidationConfigError(key: key, message: shape) }
            return try checked(code...code, key: key)
        }
        guard let low = parseCode(bytes[..<dash]), let high = parseCode(bytes[(dash + 1)...]) else {
            throw ValidationConfigError(key: key, message: shape)
        }
        guard low <= high else {
            throw ValidationConfigError(key: key, message: "range \(low)-\(high) ends before it starts")
        }
        return try checked(low...high, key: key)
    }

    private static func checked(_ range: ClosedRange<Int>, key: String) throws(ValidationConfigError) -> ClosedRange<Int> {
        for code in [range.lowerBound, range.upperBound] where !configurableCodes.contains(code) {
            throw ValidationConfigError(key: key, message: "status code \(code) is outside 100...599")
        }
        return range
    }

    /// Decimal digits with optional surrounding spaces or tabs; nil for anything else.
    private static func parseCode(_ bytes: ArraySlice<UInt8>) -> Int? {
        let isBlank = { (b: UInt8) in b == 0x20 || b == 0x09 }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
              let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return nil }
        let digits = bytes[first...last]
        guard digits.count <= 6 else { return nil }
        var value = 0
        for b in digits {
            guard b >= 0x30, b <= 0x39 else { return nil }
            value = value * 10 + Int(b - 0x30)
        }
        return value
    }
}
