import XCTest
final class AirlockIntegrationTestsPlaceholder: XCTestCase { func testNothing() {} }
