import AirlockSession
import XCTest

/// The client connection's lifecycle with no sockets: keep-alive, backpressure, half-close and
/// drain, alone and together.
final class ClientLifecycleTests: XCTestCase {
    let grace: Duration = .milliseconds(100)

    func testKeepAliveRoundTrip() {
        var l = ClientLifecycle()
        XCTAssertEqual(l.phase, .awaitingHead)
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .seconds(30), drainGrace: grace), .keepWaiting)
        l.dispatched()
        XCTAssertEqual(l.phase, .forwarding)
        XCTAssertTrue(l.carriesAnotherRequest(inputBuffered: false))
        l.exchangeEnded()
        XCTAssertEqual(l.phase, .awaitingHead)
        XCTAssertTrue(l.headTimerApplies)
    }

    func testPausedForOutputTakesNoRequestUntilTheClientReads() {
        var l = ClientLifecycle()
        l.outputBacklogged()
        XCTAssertEqual(l.phase, .pausedForOutput)
        l.dispatched()
        XCTAssertEqual(l.phase, .pausedForOutput, "no request is dispatched while paused")
        XCTAssertTrue(l.outputDrained())
        XCTAssertEqual(l.phase, .awaitingHead)
        XCTAssertFalse(l.outputDrained(), "only a paused connection resumes")
    }

    func testHalfCloseAfterWholeRequestsClosesOnceAnswered() {
        var l = ClientLifecycle()
        l.dispatched()
        l.inputClosed()
        XCTAssertFalse(l.carriesAnotherRequest(inputBuffered: false), "the response says Connection: close")
        XCTAssertTrue(l.carriesAnotherRequest(inputBuffered: true), "a pipelined request is still answered")
        l.exchangeEnded()
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .zero, drainGrace: grace), .close)
        XCTAssertFalse(l.headTimerApplies, "a half-closed client's partial head can never finish")
    }

    func testHalfCloseInTheMiddleOfAHeadIsRefused() {
        var l = ClientLifecycle()
        l.inputClosed()
        XCTAssertEqual(l.whenIdle(inputBuffered: 12, idleFor: .zero, drainGrace: grace), .refuseTruncatedHead)
    }

    func testDrainClosesIdleConnectionsAtOnceButWaitsForARequestInFlight() {
        var l = ClientLifecycle()
        l.drain()
        XCTAssertFalse(l.carriesAnotherRequest(inputBuffered: true), "a draining connection announces close")
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .seconds(5), drainGrace: grace), .close)
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .milliseconds(30), drainGrace: grace),
                       .awaitInFlightRequest(.milliseconds(70)), "its last response left 30 ms ago")
        XCTAssertEqual(l.whenIdle(inputBuffered: 40, idleFor: .seconds(5), drainGrace: grace), .keepWaiting,
                       "a head already arriving is finished and answered")
    }

    func testDrainAndHalfCloseTogether() {
        var l = ClientLifecycle()
        l.drain()
        l.inputClosed()
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .zero, drainGrace: grace), .close,
                       "nothing more can come: no grace")
        XCTAssertEqual(l.whenIdle(inputBuffered: 3, idleFor: .zero, drainGrace: grace), .refuseTruncatedHead)
    }

    func testForwardingIsNeverIdle() {
        var l = ClientLifecycle()
        l.dispatched()
        l.drain()
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .seconds(9), drainGrace: grace), .keepWaiting,
                       "an exchange in flight finishes first")
        l.closed()
        l.exchangeEnded()
        XCTAssertEqual(l.phase, .closed, "closed is final")
    }

    func testATunnelCarriesNoFurtherRequest() {
        var l = ClientLifecycle()
        l.tunnelStarted()
        XCTAssertEqual(l.phase, .tunneling)
        XCTAssertFalse(l.carriesAnotherRequest(inputBuffered: true), "bytes behind a CONNECT are the tunnel's")
        XCTAssertEqual(l.whenIdle(inputBuffered: 0, idleFor: .seconds(1), drainGrace: grace), .keepWaiting)
        l.exchangeEnded()
        XCTAssertEqual(l.phase, .tunneling, "never back to heads")
        l.drain()
        XCTAssertEqual(l.phase, .tunneling, "a drain leaves it to the drain timeout")
        l.closed()
        XCTAssertEqual(l.phase, .closed)
    }
}
