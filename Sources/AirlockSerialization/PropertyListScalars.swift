/// The text forms of an XML property list's leaf values, as CoreFoundation reads them.
/// Each check takes the element's raw content; surrounding whitespace is ignored except for dates.
enum PropertyListScalars {
    /// `[+-]?` then decimal digits or `0x` hex digits, fitting Int64 when negative and UInt64 otherwise.
    static func isInteger(_ content: [UInt8]) -> Bool {
        var s = trimmed(content)[...]
        var negative = false
        if let sign = s.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            s = s.dropFirst()
        }
        var radix: UInt64 = 10
        if s.count > 2, s.first == UInt8(ascii: "0"), s.dropFirst().first.map({ $0 | 0x20 }) == UInt8(ascii: "x") {
            radix = 16
            s = s.dropFirst(2)
        }
        guard !s.isEmpty else { return false }
        var magnitude: UInt64 = 0
        for b in s {
            guard let digit = digitValue(b), digit < radix else { return false }
            let (shifted, o1) = magnitude.multipliedReportingOverflow(by: radix)
            let (sum, o2) = shifted.addingReportingOverflow(digit)
            guard !o1, !o2 else { return false }
            magnitude = sum
        }
        return !negative || magnitude <= UInt64(Int64.max) + 1
    }

    /// `[+-]?` then digits with an optional fraction and exponent, or nan, inf, infinity (any case).
    static func isReal(_ content: [UInt8]) -> Bool {
        var s = trimmed(content)[...]
        let lowered = s.map { $0 | 0x20 }
        if lowered.elementsEqual("nan".utf8) { return true }
        if let sign = s.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { s = s.dropFirst() }
        let word = s.map { $0 | 0x20 }
        if word.elementsEqual("inf".utf8) || word.elementsEqual("infinity".utf8) { return true }
        var digits = 0
        while let b = s.first, isDigit(b) { digits += 1; s = s.dropFirst() }
        if s.first == UInt8(ascii: ".") {
            s = s.dropFirst()
            while let b = s.first, isDigit(b) { digits += 1; s = s.dropFirst() }
        }
        guard digits > 0 else { return false }
        if let e = s.first, e | 0x20 == UInt8(ascii: "e") {
            s = s.dropFirst()
            if let sign = s.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { s = s.dropFirst() }
            guard let b = s.first, isDigit(b) else { return false }
            while let b = s.first, isDigit(b) { s = s.dropFirst() }
        }
        return s.isEmpty
    }

    /// `YYYY(-MM(-DD(THH(:MM(:SS)?)?)?)?)?Z`, the year optionally negative and at least four digits,
    /// each field within its range.
    static func isDate(_ content: [UInt8]) -> Bool {
        var s = content[...]
        if s.first == UInt8(ascii: "-") { s = s.dropFirst() }
        var yearDigits = 0
        while let b = s.first, isDigit(b) { yearDigits += 1; s = s.dropFirst() }
        guard yearDigits >= 4 else { return false }
        let fields: [(separator: UInt8, range: ClosedRange<Int>)] = [
            (UInt8(ascii: "-"), 1...12), (UInt8(ascii: "-"), 1...31), (UInt8(ascii: "T"), 0...23),
            (UInt8(ascii: ":"), 0...59), (UInt8(ascii: ":"), 0...60),
        ]
        for field in fields {
            guard s.first == field.separator else { break }
            s = s.dropFirst()
            guard s.count >= 2, let tens = s.first, isDigit(tens), let ones = s.dropFirst().first, isDigit(ones),
                  field.range.contains(Int(tens - 0x30) * 10 + Int(ones - 0x30))
            else { return false }
            s = s.dropFirst(2)
        }
        return s.elementsEqual([UInt8(ascii: "Z")])
    }

    /// Base64 with whitespace anywhere, at most two `=` of padding at the end, a multiple of four characters.
    static func isBase64(_ content: [UInt8]) -> Bool {
        var characters = 0
        var padding = 0
        for b in content {
            if isSpace(b) { continue }
            if b == UInt8(ascii: "=") {
                padding += 1
            } else {
                guard padding == 0, isBase64Digit(b) else { return false }
            }
            characters += 1
        }
        return padding <= 2 && characters % 4 == 0
    }

    // MARK: Bytes

    private static func trimmed(_ content: [UInt8]) -> [UInt8] {
        guard let first = content.firstIndex(where: { !isSpace($0) }),
              let last = content.lastIndex(where: { !isSpace($0) })
        else { return [] }
        return Array(content[first...last])
    }

    private static func digitValue(_ b: UInt8) -> UInt64? {
        if isDigit(b) { return UInt64(b - 0x30) }
        let lower = b | 0x20
        if lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "f") { return UInt64(lower - 0x57) }
        return nil
    }

    private static func isBase64Digit(_ b: UInt8) -> Bool {
        isDigit(b) || (b | 0x20) &- 0x61 < 26 || b == UInt8(ascii: "+") || b == UInt8(ascii: "/")
    }

    private static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
}
