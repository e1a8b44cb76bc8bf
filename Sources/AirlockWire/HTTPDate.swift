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

    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is not an HTTP-date.
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        if let comma = b.firstIndex(of: ByteClass.comma) {
            let day = String(decoding: b[..<comma], as: UTF8.self)
            if comma == 3, shortDays.contains(day) { return imfFixdate(Array(b[(comma + 1)...])) }
            if longDays.contains(day) { return rfc850(Array(b[(comma + 1)...])) }
            return nil
        }
        return asctime(b)
    }

    /// `SP 06 SP Nov SP 1994 SP 08:49:37 SP GMT`
    private static func imfFixdate(_ b: [UInt8]) -> Int64? {
        guard b.count == 25, b[0] == ByteClass.sp, b[3] == ByteClass.sp, b[7] == ByteClass.sp, b[12] == ByteClass.sp,
              b[21] == ByteClass.sp, String(decoding: b[22...], as: UTF8.self) == "GMT",
              let day = number(b[1..<3]), let month = month(b[4..<7]), let year = number(b[8..<12]),
              let time = clock(b[13..<21])
        else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// `SP 06-Nov-94 SP 08:49:37 SP GMT`
    private static func rfc850(_ b: [UInt8]) -> Int64? {
        guard b.count == 23, b[0] == ByteClass.sp, b[3] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              b[10] == ByteClass.sp, b[19] == ByteClass.sp, String(decoding: b[20...], as: UTF8.self) == "GMT",
              let day = number(b[1..<3]), let month = month(b[4..<7]), let yy = number(b[8..<10]),
              let time = clock(b[11..<19])
        else { return nil }
        return seconds(year: yy >= 70 ? 1900 + yy : 2000 + yy, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day space-padded).
    private static func asctime(_ b: [UInt8]) -> Int64? {
        guard b.count == 24, shortDays.contains(String(decoding: b[0..<3], as: UTF8.self)),
              b[3] == ByteClass.sp, b[7] == ByteClass.sp, b[10] == ByteClass.sp, b[19] == ByteClass.sp,
              let month = month(b[4..<7]), let time = clock(b[11..<19]), let year = number(b[20..<24])
        else { return nil }
        let day: Int?
        if b[8] == ByteClass.sp { day = number(b[9..<10]) } else { day = number(b[8..<10]) }
        guard let day else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    private static func number(_ b: ArraySlice<UInt8>) -> Int? {
        var v = 0
        for c in b {
            guard ByteClass.isDigit(c) else { return nil }
            v = v * 10 + Int(c - 0x30)
        }
        return b.isEmpty ? nil : v
    }

    private static func month(_ b: ArraySlice<UInt8>) -> Int? {
        months.firstIndex(of: String(decoding: b, as: UTF8.self)).map { $0 + 1 }
    }

    /// `08:49:37` → seconds into the day.
    private static func clock(_ b: ArraySlice<UInt8>) -> Int? {
        let s = b.startIndex
        guard b.count == 8, b[s + 2] == ByteClass.colon, b[s + 5] == ByteClass.colon,
              let h = number(b[s..<(s + 2)]), let m = number(b[(s + 3)..<(s + 5)]), let sec = number(b[(s + 6)..<(s + 8)]),
              h < 24, m < 60, sec <= 60
        else { return nil }
        return h * 3600 + m * 60 + sec
    }

    private static func seconds(year: Int, month: Int, day: Int, time: Int) -> Int64? {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard year >= 1, day >= 1, day <= lengths[month - 1] else { return nil }
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
