import AirlockSerialization
import Foundation
import XCTest

/// XML property lists: plistlib's output, hand-written documents, and broken structure and leaves.
final class XMLPropertyListTests: XCTestCase {
    private func plist(_ body: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        \(body)
        </plist>

        """
    }

    private func assertValid(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(checkPlist(text), text, file: file, line: line)
    }

    private func assertInvalid(_ text: String, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let error = checkPlist(text) else {
            XCTFail("\(text.debugDescription) should be rejected for \(fragment)", file: file, line: line)
            return
        }
        XCTAssertTrue(error.hasPrefix("XML: "), error, file: file, line: line)
        XCTAssertTrue(error.contains(fragment), "\(error) should mention \(fragment)", file: file, line: line)
    }

    // MARK: Valid

    func testPlistlibOutputIsValid() throws {
        let xml = try pythonPlist(BinaryPropertyListTests.sample.replacingOccurrences(of: ", 'uid': plistlib.UID(7)", with: ""),
                                  format: "XML")
        XCTAssertTrue(String(decoding: xml, as: UTF8.self).contains("<date>2024-01-02T03:04:05Z</date>"))
        XCTAssertNil(checkPlist(xml))
        XCTAssertNil(checkPlist(try pythonPlist("[1.5, float('inf'), -0.0, 1e300, {'': ''}]", format: "XML")))
    }

    func testMinimalAndHandWrittenDocuments() {
        assertValid(#"<plist version="1.0"><string>x</string></plist>"#)
        assertValid("<plist><dict/></plist>")
        assertValid(plist("<array/>"))
        assertValid(plist("<string/>"))
        assertValid(plist("<true/>"))
        assertValid(plist("<false></false>"))
        assertValid(plist("""
            <!-- a comment -->
            <dict>
              <key>a &amp; b</key> <string><![CDATA[<raw>]]> &lt;3 &#x1F600;</string>
              <?pi inside?>
              <key>empty</key><dict></dict>
              <key>list</key>
              <array>
                <integer>-9223372036854775808</integer> <integer>18446744073709551615</integer>
                <integer> 0x1f </integer> <integer>+7</integer>
                <real>1.5e-3</real> <real>-inf</real> <real>NaN</real> <real>.5</real> <real>3.</real>
                <date>2024-01-02T03:04:05Z</date> <date>2024-02Z</date> <date>-0044-03-15T12Z</date>
                <data>
                  AAEC
                  AwQ=
                </data>
                <data></data>
                <dict><key>k</key><array><array><dict/></array></array></dict>
              </array>
            </dict>
            """))
    }

    // MARK: Structure

    func testRootAndPlistElement() {
        assertInvalid("<dict/>", "root element is <dict>, not <plist>")
        assertInvalid(#"<plist version="2.0"><true/></plist>"#, "unsupported plist version '2.0' at byte 16")
        assertInvalid("<plist/>", "<plist> holds no value at byte 0")
        assertInvalid(plist(""), "<plist> holds no value")
        assertInvalid(plist("<true/><false/>"), "second value in <plist>")
        assertInvalid(plist("<plist><true/></plist>"), "unknown element <plist>")
        assertInvalid(plist("<foo/>"), "unknown element <foo>")
        assertInvalid(plist("hello"), "text directly inside <plist>")
        assertInvalid("", "empty document at byte 0")
    }

    func testDictionariesAlternateKeysAndValues() {
        assertInvalid(plist("<dict><string>a</string></dict>"), "<string> where <dict> expects a <key>")
        assertInvalid(plist("<dict><key>a</key></dict>"), "<key> without a value at the end of <dict>")
        assertInvalid(plist("<dict><key>a</key><key>b</key></dict>"), "<key> where <dict> expects a value")
        assertInvalid(plist("<array><key>k</key></array>"), "<key> outside a <dict>")
        assertInvalid(plist("<key>k</key>"), "<key> outside a <dict>")
        assertInvalid(plist("<dict> x <key>k</key><true/></dict>"), "text directly inside <dict>")
        assertInvalid(plist("<array>&amp;</array>"), "text directly inside <array>")
        assertInvalid(plist("<string>a<true/></string>"), "element <true> inside <string>")
        assertInvalid(plist("<dict><key><b/></key><true/></dict>"), "element <b> inside <key>")
    }

    func testMalformedXMLIsReportedByTheXMLCheck() {
        assertInvalid(plist("<string>x</plist>"), "end tag </plist> does not match <string>")
        assertInvalid("<plist><true/></plist><plist/>", "second root element at byte 22")
    }

    // MARK: Leaves

    func testIntegers() {
        for bad in ["", " ", "12a", "0x", "0xg", "1.0", "--1", "18446744073709551616", "-9223372036854775809", "&#49;"] {
            assertInvalid(plist("<integer>\(bad)</integer>"), "malformed <integer>")
        }
    }

    func testReals() {
        for bad in ["", ".", "1.2.3", "e5", "1e", "1e+", "infinite", "0x10", "1,5"] {
            assertInvalid(plist("<real>\(bad)</real>"), "malformed <real> '\(bad)'")
        }
    }

    func testDates() {
        for bad in ["", "2024", "24-01-02T03:04:05Z", "2024-13-01T00:00:00Z", "2024-01-32Z", "2024-01-02T24:00:00Z",
                    "2024-01-02 03:04:05Z", "2024-01-02T03:04:05", "2024-01-02T03:04:05+01:00", " 2024Z"] {
            assertInvalid(plist("<date>\(bad)</date>"), "malformed <date> '\(bad)'")
        }
    }

    func testData() {
        for bad in ["abc", "ab=c", "a===", "====A", "ab!d", "<![CDATA[AAAA]]>"] {
            assertInvalid(plist("<data>\(bad)</data>"), "malformed <data>")
        }
    }

    func testBooleansAreEmpty() {
        assertInvalid(plist("<true>1</true>"), "<true> is not empty")
        assertInvalid(plist("<false> </false>"), "<false> is not empty")
    }

    func testLongContentIsCutInTheMessage() {
        let error = checkPlist(plist("<integer>\(String(repeating: "9", count: 100))</integer>")) ?? ""
        XCTAssertTrue(error.contains("'\(String(repeating: "9", count: 40))…'"), error)
    }
}
