import AirlockSerialization
import XCTest

/// XML 1.0 well-formedness: what a document may hold, and a battery of malformed ones.
final class XMLValidationTests: XCTestCase {
    private func assertWellFormed(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(checkXML(text), "\(text.debugDescription) should be well-formed", file: file, line: line)
    }

    private func assertMalformed(
        _ bytes: [UInt8], _ fragment: String, offset: Int, file: StaticString = #filePath, line: UInt = #line
    ) {
        guard let error = checkXML(bytes) else {
            XCTFail("\(String(decoding: bytes, as: UTF8.self).debugDescription) should be malformed", file: file, line: line)
            return
        }
        XCTAssertTrue(error.contains(fragment), "\(error) should mention \(fragment)", file: file, line: line)
        XCTAssertTrue(error.hasSuffix("at byte \(offset)"), "\(error) should point at byte \(offset)", file: file, line: line)
    }

    private func assertMalformed(
        _ text: String, _ fragment: String, offset: Int, file: StaticString = #filePath, line: UInt = #line
    ) {
        assertMalformed(Array(text.utf8), fragment, offset: offset, file: file, line: line)
    }

    func testMinimalDocuments() {
        assertWellFormed("<a/>")
        assertWellFormed("<a></a>")
        assertWellFormed("<a >text</a >")
        assertWellFormed("\n<root/>\n")
    }

    func testAFullDocument() {
        assertWellFormed("""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- a comment before the root -->
            <?xml-stylesheet type="text/xsl" href="style.xsl"?>
            <!DOCTYPE feed PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
            <feed xmlns="http://www.w3.org/2005/Atom" xml:lang='en'>
              <title type="text">Caf&#233; &amp; bar &lt;3 &gt; &quot;q&quot; &apos;a&apos; &#x1F600;</title>
              <entry id="1" empty=""><summary><![CDATA[<b>raw</b> & ]] ]>]]></summary></entry>
              <e:ns-name.x_y e:attr="v&amp;w"/>
              <?pi inside?>
              <!-- inside -->
              <unicode name="é">中文 😀</unicode>
            </feed>
            <!-- after the root -->
            <?done?>

            """)
    }

    func testDeclarationVariantsAndDoctypes() {
        assertWellFormed("<?xml version='1.1'?><a/>")
        assertWellFormed("<?xml version=\"1.0\" ?><a/>")
        assertWellFormed("\u{FEFF}<?xml version=\"1.0\"?><a/>")
        assertWellFormed("<!DOCTYPE a><a/>")
        assertWellFormed("<!DOCTYPE a SYSTEM \"a.dtd\"><a/>")
        assertWellFormed("<?xml version=\"1.0\"?>\n<!DOCTYPE a SYSTEM 'a.dtd' >\n<a/>")
    }

    func testEmptyAndRootless() {
        assertMalformed("", "empty document", offset: 0)
        assertMalformed("   ", "no root element", offset: 3)
        assertMalformed("<!-- only a comment -->", "no root element", offset: 23)
        assertMalformed("<?xml version=\"1.0\"?>", "no root element", offset: 21)
    }

    func testTagsMustNestAndMatch() {
        assertMalformed("<a><b></a></b>", "end tag </a> does not match <b>", offset: 6)
        assertMalformed("<a>", "unclosed element <a>", offset: 3)
        assertMalformed("<a><b>text</b>", "unclosed element <a>", offset: 14)
        assertMalformed("<a></A>", "end tag </A> does not match <a>", offset: 3)
        assertMalformed("</a>", "end tag without a start tag", offset: 0)
        assertMalformed("<a/></a>", "end tag without a start tag", offset: 4)
        assertMalformed("<a></a ", "in an end tag", offset: 7)
    }

    func testExactlyOneRoot() {
        assertMalformed("<a/><b/>", "second root element", offset: 4)
        assertMalformed("<a/>text", "text after the root element", offset: 4)
        assertMalformed("text<a/>", "text before the root element", offset: 0)
        assertMalformed("<a/>&amp;", "text after the root element", offset: 4)
        assertMalformed("<a/><![CDATA[x]]>", "markup declaration outside the root element", offset: 4)
    }

    func testNames() {
        assertMalformed("<1a/>", "where a name was expected", offset: 1)
        assertMalformed("< a/>", "where a name was expected", offset: 1)
        assertMalformed("<-a/>", "where a name was expected", offset: 1)
        assertWellFormed("<_a-1.b:c/>")
        assertWellFormed("<é·\u{0301}/>")
    }

    func testAttributes() {
        assertMalformed("<a b=c/>", "quoted attribute value", offset: 5)
        assertMalformed("<a b/>", "where '=' was expected", offset: 4)
        assertMalformed("<a b=\"1\" b=\"2\"/>", "duplicate attribute 'b'", offset: 9)
        assertMalformed("<a b=\"1\"c=\"2\"/>", "in a start tag", offset: 8)
        assertMalformed("<a b=\"x<y\"/>", "'<' in an attribute value", offset: 7)
        assertMalformed("<a b=\"x/>", "unterminated attribute value", offset: 5)
        assertMalformed("<a b='&bogus;'/>", "undeclared entity '&bogus;'", offset: 6)
        assertMalformed("<a", "unterminated start tag", offset: 0)
        assertMalformed("<a / >", "in a start tag", offset: 3)
        assertWellFormed("<a b=\"1\" B=\"2\" c:b='3' d = \"'\" e='\"'/>")
    }

    func testReferences() {
        assertMalformed("<a>&nbsp;</a>", "undeclared entity '&nbsp;'", offset: 3)
        assertMalformed("<a>AT&T</a>", "entity reference without ';'", offset: 5)
        assertMalformed("<a>a & b</a>", "'&' not starting a reference", offset: 5)
        assertMalformed("<a>&#;</a>", "malformed character reference", offset: 3)
        assertMalformed("<a>&#x;</a>", "malformed character reference", offset: 3)
        assertMalformed("<a>&#12a;</a>", "malformed character reference", offset: 3)
        assertMalformed("<a>&#0;</a>", "character XML does not allow", offset: 3)
        assertMalformed("<a>&#xD800;</a>", "character XML does not allow", offset: 3)
        assertMalformed("<a>&#x110000;</a>", "character XML does not allow", offset: 3)
        assertMalformed("<a>&#99999999999999999999;</a>", "character XML does not allow", offset: 3)
        assertWellFormed("<a>&#9;&#xA;&#x10FFFF;&#65;</a>")
    }

    func testCharacters() {
        assertMalformed("<a>\u{01}</a>", "control character 0x01", offset: 3)
        assertMalformed("<a b=\"\u{0B}\"/>", "control character 0x0B", offset: 6)
        assertMalformed(bytes("<a>") + [0xFF] + bytes("</a>"), "invalid UTF-8", offset: 3)
        assertMalformed(bytes("<a>") + [0xED, 0xA0, 0x80] + bytes("</a>"), "invalid UTF-8", offset: 3)
        assertMalformed(bytes("<a>") + [0xEF, 0xBF, 0xBF] + bytes("</a>"), "character XML does not allow", offset: 3)
        assertMalformed("<a>x]]>y</a>", "']]>' in character data", offset: 4)
        assertWellFormed("<a>x]]y ] > </a>")
    }

    func testComments() {
        assertMalformed("<a><!-- a -- b --></a>", "'--' inside a comment", offset: 10)
        assertMalformed("<a><!-- a ---></a>", "'--' inside a comment", offset: 10)
        assertMalformed("<a/><!-- open", "unterminated comment", offset: 4)
        assertWellFormed("<a><!----><!-- - --></a>")
    }

    func testCDATA() {
        assertMalformed("<a><![CDATA[open</a>", "unterminated CDATA section", offset: 3)
        assertMalformed("<a><![CDATA[\u{02}]]></a>", "control character", offset: 12)
        assertMalformed("<a><![cdata[x]]></a>", "unexpected markup declaration in content", offset: 3)
    }

    func testProcessingInstructionsAndDeclaration() {
        assertMalformed(" <?xml version=\"1.0\"?><a/>", "XML declaration not at the start", offset: 1)
        assertMalformed("<a/><?xml version=\"1.0\"?>", "XML declaration not at the start", offset: 4)
        assertMalformed("<a><?XmL x?></a>", "XML declaration not at the start", offset: 3)
        assertMalformed("<?xml?><a/>", "XML declaration not at the start", offset: 0)
        assertMalformed("<?xml encoding=\"UTF-8\"?><a/>", "'version' was expected", offset: 6)
        assertMalformed("<?xml version=\"2.0\"?><a/>", "unsupported XML version", offset: 15)
        assertMalformed("<?xml version=\"1.0\" standalone=\"maybe\"?><a/>", "standalone must be", offset: 32)
        assertMalformed("<?xml version=\"1.0\" encoding=\"8bit\"?><a/>", "malformed encoding name", offset: 30)
        assertMalformed("<?xml version=\"1.0\" standalone=\"yes\" encoding=\"UTF-8\"?><a/>", "in the XML declaration", offset: 37)
        assertMalformed("<?xml version=1.0?><a/>", "quoted value", offset: 14)
        assertMalformed("<a><?pi unterminated</a>", "unterminated processing instruction", offset: 3)
        assertMalformed("<a><?pi?x?></a>", "after a processing instruction target", offset: 7)
    }

    func testDoctype() {
        assertMalformed("<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>", "internal subsets are not supported", offset: 12)
        assertMalformed("<a/><!DOCTYPE a>", "DOCTYPE after the root element", offset: 4)
        assertMalformed("<!DOCTYPE a><!DOCTYPE a><a/>", "second DOCTYPE", offset: 12)
        assertMalformed("<!DOCTYPE a PUBLIC \"{bad}\" \"x\"><a/>", "in a public identifier", offset: 20)
        assertMalformed("<!DOCTYPE a PUBLIC \"id\"><a/>", "where a system literal was expected", offset: 23)
        assertMalformed("<!DOCTYPE><a/>", "after <!DOCTYPE", offset: 9)
        assertMalformed("<!ELEMENT a ANY><a/>", "markup declaration outside the root element", offset: 0)
    }

    func testDeepNestingNeedsNoRecursion() {
        let depth = 100_000
        assertWellFormed(String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth))
    }
}
