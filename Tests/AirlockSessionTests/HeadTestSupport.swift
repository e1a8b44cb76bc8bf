import AirlockWire
import XCTest

/// A response head parsed by the real parser from a status line and field lines (joined with
/// CRLF here), so framing (`declaredFraming`) is what the gateway would see.
func responseHead(_ lines: String..., file: StaticString = #filePath, line: UInt = #line) -> ResponseHead {
    let text = lines.joined(separator: "\r\n") + "\r\n\r\n"
    do {
        return try Array(text.utf8).withUnsafeBytes { try ResponseParser.parse($0) }
    } catch {
        XCTFail("bad test head: \(error)", file: file, line: line)
        return ResponseHead(status: 599, reason: "")
    }
}

/// A request head parsed by the real parser.
func requestHead(_ lines: String..., file: StaticString = #filePath, line: UInt = #line) -> RequestHead {
    let text = lines.joined(separator: "\r\n") + "\r\n\r\n"
    do {
        return try Array(text.utf8).withUnsafeBytes { try RequestParser.parse($0, limits: WireLimits()) }
    } catch {
        XCTFail("bad test head: \(error)", file: file, line: line)
        return RequestHead(method: .other("BAD"), target: .asterisk, host: "")
    }
}
