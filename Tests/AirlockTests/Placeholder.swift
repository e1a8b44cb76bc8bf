import XCTest
final class AirlockTestsPlaceholder: XCTestCase { func testNothing() {} }
