@testable import AirlockIO
import Glibc
import XCTest

/// Every stream holds a `StreamTimeouts`: kept in 64 bytes (no Optionals inside), it must
/// still give back exactly the timeouts it was made with, none included.
final class StreamTimeoutsTests: XCTestCase {
    func testFitsInSixtyFourBytes() {
        XCTAssertLessThanOrEqual(MemoryLayout<StreamTimeouts>.size, 64)
    }

    func testGivesBackWhatItWasMadeWith() {
        let none = StreamTimeouts(read: nil, write: nil, readTV: nil, writeTV: nil)
        XCTAssertNil(none.read)
        XCTAssertNil(none.write)
        XCTAssertNil(none.readTV)
        XCTAssertNil(none.writeTV)

        let loop = EventLoop(name: "timeouts")
        let t = loop.timeouts(read: .seconds(75), write: .milliseconds(1500))
        XCTAssertEqual(t.read, .seconds(75))
        XCTAssertEqual(t.write, .milliseconds(1500))
        XCTAssertEqual(t.readTV?.tv_sec, 75)
        XCTAssertEqual(t.writeTV?.tv_sec, 1)
        XCTAssertNotEqual(t.readTV?.tv_usec, t.writeTV?.tv_usec)

        let zero = StreamTimeouts(read: .zero, write: nil, readTV: Duration.zero.timeval, writeTV: nil)
        XCTAssertEqual(zero.read, .zero)
        XCTAssertEqual(zero.readTV?.tv_sec, 0)
        XCTAssertEqual(zero.readTV?.tv_usec, 0)
        XCTAssertNil(zero.write)
        XCTAssertNil(zero.writeTV)
    }
}
