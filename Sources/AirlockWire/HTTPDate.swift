/// An HTTP-date (RFC 9110 5.6.7) as seconds since the Unix epoch. Recipients must accept all
/// three forms, so all three parse:
///
///     IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
///     rfc850-date  Sunday, 06-Nov-94 08:49:37 GMT
///     asctime-date Sun Nov  6 08:49:37 1994
///
/// Strictly otherwise: names as written (case-sensitive), exact spacing, "GMT", fields in range
/// (second 60 allowed for a leap second). The day name is checked against its list, not
/// against the date (a wrong weekday is common in the wild and harmless). An rfc850 two-digit
/// year is read in the window 1970–2069: RFC 9110's "no more than 50 years in the future" for
/// any clock before 2020+50. Hand-written because no library in the toolchain parses HTTP-dates
/// (Foundation's `Date.HTTPFormatStyle` is not in this toolchain, and the pure modules keep
/// Foundation out).
public enum HTTPDate {
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    /// Three-letter names as one number each (`key`): compared without a String.
    private static let monthKeys: [UInt32] = months.map { key(Array($0.utf8), 0) }
    private static let shortDayKeys: [UInt32] = shortDays.map { key(Array($0.utf8), 0) }
    /// Month lengths of a common year (February gains a day in a leap year).
    private static let monthLengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is not an HTTP-date. Reads the
    /// text's bytes in place (a cache miss parses several dates: no allocation per parse).
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    public static func parse(_ b: UnsafeRawBufferPointer) -> Int64? {
        // Nearly every date on the wire is an IMF-fixdate (a cache miss reads two or three).
        if let t = fixdate(b) { return t }
        return parseAnyForm(b)
    }

    /// The general parser (all three forms, name lists and loops), as `parse` was before its
    /// fast path: what `fixdate` must agree with, and what reads whatever `fixdate` does not.
    static func parseAnyForm(_ b: UnsafeRawBufferPointer) -> Int64? {
        if let comma = b.firstIndex(of: ByteClass.comma) {
            if comma == 3, shortDayKeys.contains(key(b, 0)) { return imfFixdate(b, comma + 1) }
            if matches(b, 0, longDays, length: comma) { return rfc850(b, comma + 1) }
            return nil
        }
        return asctime(b)
    }

    /// The fast path: an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, 29 bytes) read as four
    /// little-endian words at fixed positions: separators and `GMT` compared under a mask, the
    /// twelve digits checked together, names compared as one number each; no lists, no loops.
    /// Nil for anything else, including a malformed fixdate, which `parseAnyForm` then reads (and
    /// refuses): so `parse` gives exactly the general parser's answer, faster for the common form.
    static func fixdate(_ b: UnsafeRawBufferPointer) -> Int64? {
        guard b.count == 29, let p = b.baseAddress else { return nil }
        @inline(__always) func word(_ at: Int) -> UInt64 { UInt64(littleEndian: p.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        let w0 = word(0)    // "Sun, 06 "
        let w1 = word(8)    // "Nov 1994"
        let w2 = word(16)   // " 08:49:3"
        let w3 = word(21)   // "9:37 GMT"
        /// `v` in byte `k` of a word.
        @inline(__always) func at(_ k: UInt64, _ v: UInt8) -> UInt64 { UInt64(v) << (8 * k) }
        /// Whether `w`'s bytes under `mask` (0xFF or 0x00 each) are all ASCII digits: high nibble
        /// 3, and still 3 with 6 added (0x3A–0x3F become 0x40–0x45). 6 is added to those bytes
        /// only, so a carry can come only out of one at 0xFA or above, which fails the first test.
        @inline(__always) func digits(_ w: UInt64, _ mask: UInt64) -> Bool {
            let ones = mask / 0xFF
            return w & (ones &* 0xF0) == ones &* 0x30 && (w &+ ones &* 0x06) & (ones &* 0xF0) == ones &* 0x30
        }
        let sp = ByteClass.sp, colon = ByteClass.colon
        let punct0 = at(3, 0xFF) | at(4, 0xFF) | at(7, 0xFF)
        let punct2 = at(0, 0xFF) | at(3, 0xFF) | at(6, 0xFF)
        let punct3 = at(4, 0xFF) | at(5, 0xFF) | at(6, 0xFF) | at(7, 0xFF)
        guard w0 & punct0 == at(3, ByteClass.comma) | at(4, sp) | at(7, sp),
              w1 & at(3, 0xFF) == at(3, sp),
              w2 & punct2 == at(0, sp) | at(3, colon) | at(6, colon),
              w3 & punct3 == at(4, sp) | at(5, UInt8(ascii: "G")) | at(6, UInt8(ascii: "M")) | at(7, UInt8(ascii: "T")),
              digits(w0, at(5, 0xFF) | at(6, 0xFF)),
              digits(w1, at(4, 0xFF) | at(5, 0xFF) | at(6, 0xFF) | at(7, 0xFF)),
              digits(w2, at(1, 0xFF) | at(2, 0xFF) | at(4, 0xFF) | at(5, 0xFF) | at(7, 0xFF)),
              digits(w3, at(3, 0xFF))
        else { return nil }
        switch w0 & 0xFF_FFFF {
        case 0x6E6F4D, 0x657554, 0x646557, 0x756854, 0x697246, 0x746153, 0x6E7553: break   // Mon … Sun
        default: return nil
        }
        let month: Int
        switch w1 & 0xFF_FFFF {
        case 0x6E614A: month = 1    // Jan
        case 0x626546: month = 2    // Feb
        case 0x72614D: month = 3    // Mar
        case 0x727041: month = 4    // Apr
        case 0x79614D: month = 5    // May
        case 0x6E754A: month = 6    // Jun
        case 0x6C754A: month = 7    // Jul
        case 0x677541: month = 8    // Aug
        case 0x706553: month = 9    // Sep
        case 0x74634F: month = 10   // Oct
        case 0x766F4E: month = 11   // Nov
        case 0x636544: month = 12   // Dec
        default: return nil
        }
        /// The digit in byte `k` of `w` (checked above).
        @inline(__always) func d(_ w: UInt64, _ k: UInt64) -> Int { Int(truncatingIfNeeded: (w >> (8 * k)) & 0xF) }
        let day = d(w0, 5) * 10 + d(w0, 6), year = d(w1, 4) * 1000 + d(w1, 5) * 100 + d(w1, 6) * 10 + d(w1, 7)
        let h = d(w2, 1) * 10 + d(w2, 2), m = d(w2, 4) * 10 + d(w2, 5), sec = d(w2, 7) * 10 + d(w3, 3)
        guard h < 24, m < 60, sec <= 60, year >= 1, day >= 1 else { return nil }
        let length: Int
        switch month {
        case 2: length = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: length = 30
        default: length = 31
        }
        guard day <= length else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(h * 3600 + m * 60 + sec)
    }

    /// `SP 06 SP Nov SP 1994 SP 08:49:37 SP GMT` from `o`.
    private static func imfFixdate(_ b: UnsafeRawBufferPointer, _ o: Int) -> Int64? {
        guard b.count - o == 25, b[o] == ByteClass.sp, b[o + 3] == ByteClass.sp, b[o + 7] == ByteClass.sp,
              b[o + 12] == ByteClass.sp, b[o + 21] == ByteClass.sp, isGMT(b, o + 22),
              let day = number(b, o + 1, 2), let month = month(b, o + 4), let year = number(b, o + 8, 4),
              let time = clock(b, o + 13)
        else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// `SP 06-Nov-94 SP 08:49:37 SP GMT` from `o`.
    private static func rfc850(_ b: UnsafeRawBufferPointer, _ o: Int) -> Int64? {
        guard b.count - o == 23, b[o] == ByteClass.sp, b[o + 3] == UInt8(ascii: "-"), b[o + 7] == UInt8(ascii: "-"),
              b[o + 10] == ByteClass.sp, b[o + 19] == ByteClass.sp, isGMT(b, o + 20),
              let day = number(b, o + 1, 2), let month = month(b, o + 4), let yy = number(b, o + 8, 2),
              let time = clock(b, o + 11)
        else { return nil }
        return seconds(year: yy >= 70 ? 1900 + yy : 2000 + yy, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day space-padded).
    private static func asctime(_ b: UnsafeRawBufferPointer) -> Int64? {
        guard b.count == 24, shortDayKeys.contains(key(b, 0)),
              b[3] == ByteClass.sp, b[7] == ByteClass.sp, b[10] == ByteClass.sp, b[19] == ByteClass.sp,
              let month = month(b, 4), let time = clock(b, 11), let year = number(b, 20, 4)
        else { return nil }
        let day = b[8] == ByteClass.sp ? number(b, 9, 1) : number(b, 8, 2)
        guard let day else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// Whether the bytes from `o` (exactly `length` of them, when given) are one of `names`.
    private static func matches(_ b: UnsafeRawBufferPointer, _ o: Int, _ names: [String], length: Int? = nil) -> Bool {
        names.contains { name in
            let n = name.utf8.count
            guard o + n <= b.count, length.map({ $0 == n }) ?? true else { return false }
            return name.utf8.elementsEqual(UnsafeRawBufferPointer(rebasing: b[o..<(o + n)]))
        }
    }

    private static func isGMT(_ b: UnsafeRawBufferPointer, _ o: Int) -> Bool {
        b.count - o == 3 && b[o] == UInt8(ascii: "G") && b[o + 1] == UInt8(ascii: "M") && b[o + 2] == UInt8(ascii: "T")
    }

    /// `count` decimal digits from `o`.
    private static func number(_ b: UnsafeRawBufferPointer, _ o: Int, _ count: Int) -> Int? {
        var v = 0
        for i in o..<(o + count) {
            guard ByteClass.isDigit(b[i]) else { return nil }
            v = v * 10 + Int(b[i] - 0x30)
        }
        return count == 0 ? nil : v
    }

    private static func month(_ b: UnsafeRawBufferPointer, _ o: Int) -> Int? {
        monthKeys.firstIndex(of: key(b, o)).map { $0 + 1 }
    }

    /// Three bytes from `o` as one number.
    private static func key<B: RandomAccessCollection>(_ b: B, _ o: Int) -> UInt32 where B.Element == UInt8, B.Index == Int {
        UInt32(b[o]) << 16 | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2])
    }

    /// `08:49:37` from `o` → seconds into the day.
    private static func clock(_ b: UnsafeRawBufferPointer, _ o: Int) -> Int? {
        guard b[o + 2] == ByteClass.colon, b[o + 5] == ByteClass.colon,
              let h = number(b, o, 2), let m = number(b, o + 3, 2), let sec = number(b, o + 6, 2),
              h < 24, m < 60, sec <= 60
        else { return nil }
        return h * 3600 + m * 60 + sec
    }

    private static func seconds(year: Int, month: Int, day: Int, time: Int) -> Int64? {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let length = monthLengths[month - 1] + (month == 2 && leap ? 1 : 0)
        guard year >= 1, day >= 1, day <= length else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(time)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64(month > 2 ? month - 3 : month + 9)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

/// The last two dates parsed, by their text: the same answers as `HTTPDate.parse`, without
/// parsing a text again that one of them had. A response cache reads a `Date` and a
/// `Last-Modified` per stored response; an origin's `Date` changes once a second and a
/// document's `Last-Modified` not at all, so on a busy cache nearly every date read is one of
/// the last two (a parse ~300 instructions, a match ~30). Texts of up to 32 bytes are kept
/// (every HTTP-date form is shorter); longer ones are parsed every time.
public struct HTTPDateMemo: Sendable {
    private struct Slot: Sendable {
        var count = -1   // no text yet
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var value: Int64?

        func holds(_ count: Int, _ w: (UInt64, UInt64, UInt64, UInt64)) -> Bool {
            self.count == count && words.0 == w.0 && words.1 == w.1 && words.2 == w.2 && words.3 == w.3
        }
    }
    private var a = Slot()
    private var b = Slot()
    /// The slot the next new text replaces (the one matched or filled least recently).
    private var replaceA = true

    public init() {}

    public mutating func parse(_ text: UnsafeRawBufferPointer) -> Int64? {
        guard text.count <= 32 else { return HTTPDate.parse(text) }
        var w: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)   // the text, zero-padded
        withUnsafeMutableBytes(of: &w) { $0.copyMemory(from: text) }
        if a.holds(text.count, w) {
            replaceA = false
            return a.value
        }
        if b.holds(text.count, w) {
            replaceA = true
            return b.value
        }
        let value = HTTPDate.parse(text)
        if replaceA { a = Slot(count: text.count, words: w, value: value) } else { b = Slot(count: text.count, words: w, value: value) }
        replaceA.toggle()
        return value
    }
}
