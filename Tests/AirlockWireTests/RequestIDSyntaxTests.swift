import AirlockWire
import XCTest

/// Which client `X-Request-Id` values are kept: 1 to 128 bytes of `[A-Za-z0-9._:-]`.
final class RequestIDSyntaxTests: XCTestCase {
    func testWellFormedIDs() {
        XCTAssertTrue(RequestIDSyntax.isWellFormed("abc-123_X.y:z"))
        XCTAssertTrue(RequestIDSyntax.isWellFormed(String(repeating: "a", count: 128)))
        XCTAssertFalse(RequestIDSyntax.isWellFormed(String(repeating: "a", count: 129)))
        XCTAssertFalse(RequestIDSyntax.isWellFormed(""))
        XCTAssertFalse(RequestIDSyntax.isWellFormed("has space"))
        XCTAssertFalse(RequestIDSyntax.isWellFormed("quote\""))
        XCTAssertFalse(RequestIDSyntax.isWellFormed("slash/"))
        XCTAssertFalse(RequestIDSyntax.isWellFormed("é"))
    }
}
