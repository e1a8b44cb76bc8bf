import AirlockSecurity
import XCTest

/// "sha256/<base64>" pins: decoded and length-checked at load, one spelling per digest.
final class PinTests: XCTestCase {
    private let bytes0to31 = (0..<32).map(UInt8.init)
    private let text0to31 = "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

    func testParsesAGoodPin() throws {
        let pin = try Pin(parsing: text0to31)
        XCTAssertEqual(pin.digest, bytes0to31)
    }

    func testDescriptionIsTheConfigSpelling() throws {
        XCTAssertEqual(try Pin(digest: bytes0to31).description, text0to31)
        let allOnes = try Pin(digest: Array(repeating: 0xFF, count: 32))
        XCTAssertEqual(allOnes.description, "sha256/" + String(repeating: "/", count: 42) + "8=")
        XCTAssertEqual(try Pin(parsing: allOnes.description), allOnes, "description parses back to the same pin")
    }

    func testDigestMustBe32Bytes() {
        for count in [0, 31, 33, 64] {
            XCTAssertThrowsError(try Pin(digest: Array(repeating: 7, count: count)), "\(count) bytes") { error in
                let error = error as? SecurityConfigError
                XCTAssertEqual(error?.key, "pins")
                XCTAssertTrue(error?.message.contains("\(count)") ?? false, error?.message ?? "")
            }
        }
    }

    func testWrongPrefixIsRefused() {
        let base64 = String(text0to31.dropFirst("sha256/".count))
        for text in [base64, "SHA256/" + base64, "sha1/" + base64, "sha384/" + base64, "sha256:" + base64, " " + text0to31] {
            XCTAssertThrowsError(try Pin(parsing: text), text) { error in
                XCTAssertEqual((error as? SecurityConfigError)?.key, "pins")
                XCTAssertTrue((error as? SecurityConfigError)?.message.contains("sha256/") ?? false)
            }
        }
    }

    func testBadBase64IsRefused() {
        let cases = [
            "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",      // padding missing
            "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==",    // padding extra
            "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh=8",     // `=` inside
            "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd*h8=",     // outside the alphabet
            "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh-=",     // base64url, not base64
            "sha256/AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",     // bits under the padding: not canonical
            "sha256/AAECAwQFBgcICQoLDA0O DxAREhMUFRYXGBkaGxwdHh8=",    // whitespace
        ]
        for text in cases {
            XCTAssertThrowsError(try Pin(parsing: text), text) { error in
                let error = error as? SecurityConfigError
                XCTAssertEqual(error?.key, "pins")
                XCTAssertTrue(error?.message.hasPrefix("bad base64 after \"sha256/\": ") ?? false, "\(text): \(error?.message ?? "")")
            }
        }
    }

    func testGoodBase64OfTheWrongLengthIsRefused() {
        let cases = [
            ("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==", 31),
            ("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 33),
            ("sha256/" + String(repeating: "A", count: 64), 48),
            ("sha256/", 0),
        ]
        for (text, count) in cases {
            XCTAssertThrowsError(try Pin(parsing: text), text) { error in
                let error = error as? SecurityConfigError
                XCTAssertEqual(error?.key, "pins")
                XCTAssertEqual(error?.message, "a pin decodes to 32 bytes (SHA-256), this one to \(count)")
            }
        }
    }

    func testListParsingNamesTheFailingIndex() throws {
        let pins = try Pin.parsing([text0to31, "sha256/" + String(repeating: "/", count: 42) + "8="])
        XCTAssertEqual(pins.map(\.digest), [bytes0to31, Array(repeating: 0xFF, count: 32)])

        XCTAssertThrowsError(try Pin.parsing([text0to31, "sha256/nope"])) { error in
            XCTAssertEqual((error as? SecurityConfigError)?.key, "pins[1]")
        }
        XCTAssertThrowsError(try Pin.parsing(["md5/x"], key: "backup_pins")) { error in
            XCTAssertEqual((error as? SecurityConfigError)?.key, "backup_pins[0]")
        }
    }

    func testConfigErrorsTakeTheLoadersPath() throws {
        do {
            _ = try Pin.parsing([text0to31, text0to31, "x"])
            XCTFail("parsed a bad pin")
        } catch {
            let prefixed = error.prefixed(by: "routes[2].tls")
            XCTAssertEqual(prefixed.key, "routes[2].tls.pins[2]")
            XCTAssertEqual(prefixed.message, error.message)
            XCTAssertEqual(prefixed.description, "routes[2].tls.pins[2]: \(error.message)")
            XCTAssertEqual(error.prefixed(by: ""), error)
        }
    }

    func testCertificateFactsPinIsItsSPKIDigest() throws {
        XCTAssertEqual(Fixtures.leafA.pin, try Pin(digest: Fixtures.leafA.spkiSHA256))
        XCTAssertNotEqual(Fixtures.leafA.pin, Fixtures.intermediateA.pin)
    }
}
