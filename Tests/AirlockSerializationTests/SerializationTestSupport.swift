import AirlockSerialization
import XCTest

func facts(
    _ status: Int = 200, _ contentType: String? = "application/json", bodyIsEmpty: Bool? = false,
    url: String = "http://origin.test/items"
) -> ResponseFacts {
    ResponseFacts(status: status, contentType: contentType, url: url, bodyIsEmpty: bodyIsEmpty)
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func checkJSON(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBytes { JSONValidation.check($0) } }
func checkJSON(_ text: String) -> String? { checkJSON(Array(text.utf8)) }
func checkXML(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBytes { XMLValidation.check($0) } }
func checkXML(_ text: String) -> String? { checkXML(Array(text.utf8)) }

/// Fails unless `result` is an acceptance with exactly `body` as its replacement body.
func assertAccepted(
    _ result: ValidationResult, body expected: [UInt8]? = nil, _ note: String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    switch result {
    case .accepted(let body):
        XCTAssertEqual(body, expected, "replacement body \(note)", file: file, line: line)
    case .rejected(let error):
        XCTFail("expected acceptance, got \(error) \(note)", file: file, line: line)
    }
}

/// Fails unless `result` is a rejection with `reason` and `code`; returns the error for further checks.
@discardableResult
func assertRejected(
    _ result: ValidationResult, _ reason: RejectReason, code: Int, message: String? = nil,
    file: StaticString = #filePath, line: UInt = #line
) -> ValidationError? {
    guard case .rejected(let error) = result else {
        XCTFail("expected \(reason.rawValue), got acceptance", file: file, line: line)
        return nil
    }
    XCTAssertEqual(error.reason, reason, "\(error)", file: file, line: line)
    XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
    if let message { XCTAssertEqual(error.message, message, file: file, line: line) }
    return error
}

/// Fails unless `body` throws a `ValidationConfigError` for `key`; returns its message.
@discardableResult
func assertConfigError<T>(
    _ key: String, file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws(ValidationConfigError) -> T
) -> String? {
    do {
        let value = try body()
        XCTFail("expected a config error for \(key), got \(value)", file: file, line: line)
        return nil
    } catch {
        XCTAssertEqual(error.key, key, "\(error)", file: file, line: line)
        XCTAssertFalse(error.message.isEmpty, file: file, line: line)
        return error.message
    }
}
