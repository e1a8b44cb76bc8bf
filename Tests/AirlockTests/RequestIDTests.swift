import AirlockSerialization
import AirlockWire
import XCTest
@testable import Airlock

/// A request id is spelled alike in logs (`description`) and in the X-Request-Id field the
/// heads carry (`RequestIDField.write` with the worker's prefix).
final class RequestIDTests: XCTestCase {
    func testHeaderAndLogsSpellTheIDAlike() {
        let id = RequestID(prefix: "ab12", worker: 1, serial: 0x2f)
        var w = HeadWriter()
        RequestIDField.write(serial: id.serial, client: id.client,
                             ownPrefix: HeadWriter.FieldPrefix(name: "X-Request-Id", valuePrefix: "ab12-1-"), into: &w)
        XCTAssertEqual(id.description, "ab12-1-2f")
        XCTAssertEqual(w.bytes, Array("X-Request-Id: ab12-1-2f\r\n".utf8))
    }
}
