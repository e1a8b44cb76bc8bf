import Glibc
import XCTest
import AirlockIO
@testable import Airlock

/// The one connector of exchanges, tunnels and probes, with no socket: the dial is a closure.
final class UpstreamConnectorTests: XCTestCase {
    private let a = SocketAddress(ipLiteral: "127.0.0.1", port: 8001)!
    private let b = SocketAddress(ipLiteral: "127.0.0.2", port: 8001)!
    private let c = SocketAddress(ipLiteral: "::1", port: 8001)!

    private struct Refused: Error, CustomStringConvertible { var description: String { "no socket" } }

    func testAddressesAreDialledInResolverOrderOneAtATime() {
        var connector = UpstreamConnector()
        connector.start([a, b, c])
        var dialled: [SocketAddress] = []
        for expected in [a, b, c] {
            XCTAssertTrue(connector.hasMore)
            guard case .dialling(let addr) = connector.dialNext(isSelf: { _ in false }, freeDescriptor: { false },
                                                                { dialled.append($0) }) else {
                return XCTFail("\(expected) was not dialled")
            }
            XCTAssertEqual(addr, expected)
            XCTAssertEqual(connector.current, expected)
        }
        XCTAssertFalse(connector.hasMore)
        XCTAssertEqual(dialled, [a, b, c])
        guard case .failed(nil) = connector.dialNext(isSelf: { _ in false }, freeDescriptor: { false }, { _ in
            XCTFail("nothing is left to dial")
        }) else { return XCTFail("no address left: failed without an error") }
    }

    func testAnAddressThatIsOurOwnListenerIsNeverDialled() {
        var connector = UpstreamConnector()
        connector.start([b, a])
        guard case .ownListener(let addr) = connector.dialNext(isSelf: { $0 == self.b }, freeDescriptor: { false }, { _ in
            XCTFail("a loop is not dialled")
        }) else { return XCTFail("the loop was not reported") }
        XCTAssertEqual(addr, b)
        XCTAssertTrue(connector.hasMore, "the caller decides what follows")
    }

    func testAFailedDialReportsItsErrorAndMovesOn() {
        var connector = UpstreamConnector()
        connector.start([a, b])
        guard case .failed(let why?) = connector.dialNext(isSelf: { _ in false }, freeDescriptor: { false }, { _ in throw Refused() })
        else { return XCTFail("the dial's error was lost") }
        XCTAssertEqual(why, "no socket")
        XCTAssertEqual(connector.current, a)
        XCTAssertTrue(connector.hasMore)
        guard case .dialling(b) = connector.dialNext(isSelf: { _ in false }, freeDescriptor: { false }, { _ in }) else {
            return XCTFail("the next address was not dialled")
        }
    }

    /// Descriptors run out: idle pooled connections give way, one per retry, and the same
    /// address is dialled again until it opens or none is left to close.
    func testADescriptorShortageFreesIdleConnectionsAndRetriesTheSameAddress() {
        var connector = UpstreamConnector()
        connector.start([a, b])
        var idle = 2
        var attempts: [SocketAddress] = []
        let exhausted = IOError(.socket, "socket: Too many open files", errno: EMFILE)
        let result = connector.dialNext(isSelf: { _ in false }, freeDescriptor: {
            guard idle > 0 else { return false }
            idle -= 1
            return true
        }) { addr in
            attempts.append(addr)
            if attempts.count < 3 { throw exhausted }
        }
        guard case .dialling(a) = result else { return XCTFail("the same address opened once descriptors were freed") }
        XCTAssertEqual(attempts, [a, a, a])
        XCTAssertEqual(idle, 0)

        var starved = UpstreamConnector()
        starved.start([a])
        var tries = 0
        guard case .failed(let why?) = starved.dialNext(isSelf: { _ in false }, freeDescriptor: { false }, { _ in
            tries += 1
            throw exhausted
        }) else { return XCTFail("nothing idle to close: the dial fails") }
        XCTAssertEqual(tries, 1)
        XCTAssertTrue(why.contains("Too many open files"), why)
    }
}
