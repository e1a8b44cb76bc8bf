import XCTest
final class AirlockWireTestsPlaceholder: XCTestCase { func testNothing() {} }
