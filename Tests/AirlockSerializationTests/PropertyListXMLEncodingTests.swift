import AirlockSerialization
import Foundation
import XCTest

/// Parameters written as an XML property list: Apple's exact layout, escapes, null, and a read-back
/// through Python's `plistlib`.
final class PropertyListXMLEncodingTests: XCTestCase {
    private let head = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """

    private func plist(_ value: ParameterValue) -> String {
        String(decoding: PropertyListXMLEncoding.encode(value), as: UTF8.self)
    }

    func testLayoutIsApples() {
        let value: RequestParameters = ["b": ["1", ["c": "2"]], "a": "x", "e": [], "d": [:]]
        XCTAssertEqual(
            String(decoding: PropertyListXMLEncoding.encode(value), as: UTF8.self),
            head + """
                <dict>
                \t<key>a</key>
                \t<string>x</string>
                \t<key>b</key>
                \t<array>
                \t\t<string>1</string>
                \t\t<dict>
                \t\t\t<key>c</key>
                \t\t\t<string>2</string>
                \t\t</dict>
                \t</array>
                \t<key>d</key>
                \t<dict/>
                \t<key>e</key>
                \t<array/>
                </dict>
                </plist>

                """)
    }

    func testRootsAndEmptyParameters() {
        XCTAssertEqual(plist([:]), head + "<dict/>\n</plist>\n")
        XCTAssertEqual(plist("s"), head + "<string>s</string>\n</plist>\n")
        XCTAssertEqual(plist(["1"]), head + "<array>\n\t<string>1</string>\n</array>\n</plist>\n")
    }

    func testTextEscapesAmpersandAndAngleBracketsOnly() {
        XCTAssertEqual(
            plist(["<k&>": #"a&b<c>d"e'f é"#]),
            head + "<dict>\n\t<key>&lt;k&amp;&gt;</key>\n\t<string>a&amp;b&lt;c&gt;d\"e'f é</string>\n</dict>\n</plist>\n")
    }

    func testNullIsAnEmptyString() {
        XCTAssertEqual(
            plist(["n": .null, "e": ""]),
            head + "<dict>\n\t<key>e</key>\n\t<string></string>\n\t<key>n</key>\n\t<string></string>\n</dict>\n</plist>\n")
    }

    func testKeysSortLikeCompare() {
        let out = plist(["b": "", "B": "", "\u{FF21}": "", "😀": ""])
        let keys = out.split(separator: "\n").filter { $0.contains("<key>") }.map { $0.dropFirst(6).dropLast(6) }
        XCTAssertEqual(keys, ["B", "b", "😀", "\u{FF21}"])
    }

    func testPythonPlistlibReadsTheSameParametersBack() throws {
        let parameters: RequestParameters = [
            "name": "Ann & <Bob> \"q\" 'a'", "unicode": "é😀", "empty": "", "null": .null,
            "list": ["2", "1", ["x": "y"], [], [:]], "nested": ["z": ["deep": ["v"]], "a": "1"],
            "spaces": "  two\tlines\n ", "": "blank key",
        ]
        let expected = #"{"": "blank key", "empty": "", "list": ["2", "1", {"x": "y"}, [], {}], "# +
            #""name": "Ann & <Bob> \"q\" 'a'", "nested": {"a": "1", "z": {"deep": ["v"]}}, "null": "", "# +
            #""spaces": "  two\tlines\n ", "unicode": "\u00e9\ud83d\ude00"}"#
        XCTAssertEqual(try plistlibJSON(PropertyListXMLEncoding.encode(parameters)), expected)
    }

    /// Writes `data` to a temporary file and returns what `plistlib` reads from it, as sorted JSON.
    private func plistlibJSON(_ data: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("airlock-plist-\(UUID().uuidString).plist")
        try Data(data).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            #"import plistlib,json,sys; print(json.dumps(plistlib.load(open(sys.argv[1],"rb")), sort_keys=True))"#,
            file.path,
        ]
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, String(decoding: err, as: UTF8.self))
        return String(decoding: out, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
