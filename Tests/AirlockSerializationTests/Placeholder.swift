import XCTest
final class SerializationPlaceholderTests: XCTestCase { func testModuleBuilds() {} }
