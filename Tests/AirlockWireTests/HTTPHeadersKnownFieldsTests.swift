import AirlockWire
import XCTest

/// A head's record of the known fields it holds, and the look-ups by kind that use it, against
/// a scan by name: for heads built by `append`, by the parser (into fresh and into reused
/// storage), by `filtered` and by `removeAll`.
final class HTTPHeadersKnownFieldsTests: XCTestCase {
    private let names = ["Cache-Control", "cache-control", "Cache-Controk", "Age", "AGE", "Agf", "Vary", "vary", "Varz",
                         "ETag", "etag", "Etah", "Expires", "EXPIRES", "Expiret", "Last-Modified", "last-modified",
                         "Last-Modifiee", "Set-Cookie", "set-cookie", "Authorization", "If-None-Match", "If-Modified-Since",
                         "Range", "range", "Rangf", "Connection", "Date", "Host", "X-Y", "Content-Type"]
    private let values = ["1", " 2 ", ", ,", ", 3, 4", "a, b", "*", "x,", "keep-alive"]
    private var seed: UInt64 = 21

    private func next(_ n: Int) -> Int {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((seed >> 33) % UInt64(n))
    }

    private func indices(_ h: HTTPHeaders, _ field: KnownField) -> [Int] {
        (0..<h.count).filter { h.name(at: $0).lowercased() == field.canonicalName.lowercased() }
    }

    private func elements(_ h: HTTPHeaders, _ field: KnownField) -> [String] {
        indices(h, field).flatMap { h.value(at: $0).split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: [" ", "\t"]) }.filter { !$0.isEmpty }
    }

    private func assertAgreesByName(_ h: HTTPHeaders, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        for field in KnownField.allCases where field != .other {
            let found = indices(h, field)
            let c = "\(context) \(field)"
            XCTAssertEqual(h.contains(field), !found.isEmpty, c, file: file, line: line)
            XCTAssertEqual(h.firstIndex(field), found.first, c, file: file, line: line)
            XCTAssertEqual(h.lastIndex(field)?.index, found.last, c, file: file, line: line)
            XCTAssertEqual(h.lastIndex(field)?.count ?? 0, found.count, c, file: file, line: line)
            XCTAssertEqual(h.firstIndex(name: field.canonicalName.uppercased()), found.first, c, file: file, line: line)
            XCTAssertEqual(h.values(name: field.canonicalName), found.map { h.value(at: $0) }, c, file: file, line: line)
            XCTAssertEqual(h.withFirstListElement(field) { String(decoding: $0, as: UTF8.self) }, elements(h, field).first, c,
                           file: file, line: line)
            XCTAssertEqual(h.containsToken(field, "*"), elements(h, field).contains("*"), c, file: file, line: line)
        }
        XCTAssertEqual(h.firstIndex(lowercased: "age"), indices(h, .age).first, context, file: file, line: line)
        XCTAssertEqual(h.firstIndex(lowercased: "range"), indices(h, .range).first, context, file: file, line: line)
        XCTAssertEqual(h.firstIndex(lowercased: "x-y"), (0..<h.count).first { h.name(at: $0).lowercased() == "x-y" }, context,
                       file: file, line: line)
    }

    func testLookupsByKindAgreeWithAScanByName() throws {
        var previous = HTTPHeaders()
        for round in 0..<400 {
            let fields = (0..<next(10)).map { _ in (names[next(names.count)], values[next(values.count)]) }
            var appended = HTTPHeaders()
            for (name, value) in fields { appended.append(name: name, value: value) }
            let context = "round \(round): \(fields.map { $0.0 })"
            assertAgreesByName(appended, "appended " + context)

            let text = "HTTP/1.1 200 OK\r\n" + fields.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
            let parsed = try Array(text.utf8).withUnsafeBytes { try ResponseParser.parse($0).headers }
            assertAgreesByName(parsed, "parsed " + context)
            // Into the previous round's storage: none of its fields may linger in the record.
            let reused = try Array(text.utf8).withUnsafeBytes { try ResponseParser.parse($0, reusing: previous).headers }
            assertAgreesByName(reused, "reused " + context)
            previous = parsed

            let dropped = names[next(names.count)]
            assertAgreesByName(parsed.filtered { parsed.name(at: $0) != dropped }, "filtered " + context)
            assertAgreesByName(parsed.filtered(dropping: KnownField.Set(.age, .vary)), "filtered by kind " + context)
            XCTAssertEqual(parsed.filtered(dropping: KnownField.Set(.age, .vary)),
                           parsed.filtered { !["age", "vary"].contains(parsed.name(at: $0).lowercased()) }, context)
            var removed = parsed
            removed.removeAll(name: dropped)
            XCTAssertEqual(removed, parsed.filtered { parsed.name(at: $0).lowercased() != dropped.lowercased() }, context)
            assertAgreesByName(removed, "removed by name " + context)
            removed.removeAll(.cacheControl)
            assertAgreesByName(removed, "removed by kind " + context)
        }
    }
}
