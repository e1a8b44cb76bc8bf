import XCTest
final class SecurityPlaceholderTests: XCTestCase { func testModuleBuilds() {} }
