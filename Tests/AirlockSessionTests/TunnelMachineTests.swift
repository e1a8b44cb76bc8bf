import AirlockSession
import XCTest

/// A CONNECT tunnel's lifecycle with no sockets: connecting, the 200, backpressure each way,
/// half-close in either order (with and without output still queued), failures and timeouts,
/// and logging exactly once.
final class TunnelMachineTests: XCTestCase {
    private func established() -> TunnelMachine {
        var m = TunnelMachine()
        XCTAssertEqual(m.upstreamConnected(), .establish)
        return m
    }

    func testConnectThenEstablish() {
        var m = TunnelMachine()
        XCTAssertEqual(m.state, .connecting)
        XCTAssertFalse(m.wasEstablished)
        XCTAssertEqual(m.upstreamConnected(), .establish)
        XCTAssertEqual(m.state, .established)
        XCTAssertTrue(m.wasEstablished)
        XCTAssertEqual(m.upstreamConnected(), .none, "established once")
    }

    func testRefusedAddressGivesWayToTheNextThenAnswers() {
        var m = TunnelMachine()
        XCTAssertEqual(m.connectFailed(.refused, moreAddresses: true), .tryNextAddress)
        XCTAssertEqual(m.state, .connecting)
        XCTAssertEqual(m.connectFailed(.refused, moreAddresses: false), .respondError(.refused))
        XCTAssertEqual(m.state, .closed(.connectFailed))
        XCTAssertFalse(m.wasEstablished)
        XCTAssertEqual(m.upstreamConnected(), .none, "a late connect after the answer opens nothing")
    }

    func testConnectTimeoutAnswersAtOnce() {
        var m = TunnelMachine()
        XCTAssertEqual(m.connectFailed(.timeout, moreAddresses: true), .respondError(.timeout))
        XCTAssertEqual(m.state, .closed(.connectFailed))
    }

    func testUpstreamErrorWhileConnectingIsAConnectFailure() {
        var m = TunnelMachine()
        XCTAssertEqual(m.failed(.upstream), .respondError(.refused))
    }

    func testClientGoneWhileConnecting() {
        var m = TunnelMachine()
        XCTAssertEqual(m.failed(.client), .close(.clientError))
        XCTAssertEqual(m.upstreamConnected(), .none)
    }

    func testRefusedBeforeConnect() {
        var m = TunnelMachine()
        m.refusedBeforeConnect()
        XCTAssertEqual(m.state, .closed(.connectFailed))
    }

    // MARK: backpressure

    func testBackpressureEachWay() {
        var m = established()
        XCTAssertEqual(m.outputFilled(toward: .client), .pauseReading(.upstream))
        XCTAssertTrue(m.isPaused(.upstream))
        XCTAssertEqual(m.outputFilled(toward: .client), .none, "already paused")
        XCTAssertEqual(m.outputFilled(toward: .upstream), .pauseReading(.client))
        XCTAssertEqual(m.outputDrained(toward: .client, empty: false), .resumeReading(.upstream))
        XCTAssertFalse(m.isPaused(.upstream))
        XCTAssertEqual(m.outputDrained(toward: .client, empty: true), .none, "not paused any more")
        XCTAssertEqual(m.outputDrained(toward: .upstream, empty: true), .resumeReading(.client))
    }

    func testNoBackpressureBeforeEstablished() {
        var m = TunnelMachine()
        XCTAssertEqual(m.outputFilled(toward: .client), .none)
        XCTAssertEqual(m.outputDrained(toward: .client, empty: true), .none)
    }

    // MARK: half-close

    func testClientEOFWithNothingQueuedShutsTheUpstreamAtOnce() {
        var m = established()
        XCTAssertEqual(m.eof(from: .client, partnerOutputEmpty: true), .shutdownWrite(.upstream))
        XCTAssertEqual(m.state, .halfClosed(.client))
        // The upstream still answers; the client still reads it.
        XCTAssertEqual(m.outputFilled(toward: .client), .pauseReading(.upstream))
        XCTAssertEqual(m.outputDrained(toward: .client, empty: true), .resumeReading(.upstream))
        XCTAssertEqual(m.eof(from: .upstream, partnerOutputEmpty: true), .close(.closed))
        XCTAssertEqual(m.state, .closed(.closed))
    }

    func testEOFWaitsForThePartnersOutputToDrain() {
        var m = established()
        XCTAssertEqual(m.eof(from: .upstream, partnerOutputEmpty: false), .shutdownWhenDrained(.client))
        XCTAssertEqual(m.state, .halfClosed(.upstream))
        XCTAssertEqual(m.outputDrained(toward: .client, empty: false), .none, "still queued")
        XCTAssertEqual(m.outputDrained(toward: .client, empty: true), .shutdownWrite(.client))
        XCTAssertEqual(m.outputDrained(toward: .client, empty: true), .none, "shut once")
        XCTAssertEqual(m.eof(from: .client, partnerOutputEmpty: false), .shutdownWhenDrained(.upstream))
        XCTAssertEqual(m.outputDrained(toward: .upstream, empty: true), .close(.closed))
    }

    func testBothEOFsBeforeEitherDrainedCloseOnTheLastDrain() {
        var m = established()
        XCTAssertEqual(m.eof(from: .client, partnerOutputEmpty: false), .shutdownWhenDrained(.upstream))
        XCTAssertEqual(m.eof(from: .upstream, partnerOutputEmpty: false), .shutdownWhenDrained(.client))
        XCTAssertEqual(m.outputDrained(toward: .upstream, empty: true), .shutdownWrite(.upstream))
        XCTAssertEqual(m.outputDrained(toward: .client, empty: true), .close(.closed))
    }

    func testEOFClearsThatSidesPauseAndIsReportedOnce() {
        var m = established()
        XCTAssertEqual(m.outputFilled(toward: .upstream), .pauseReading(.client))
        XCTAssertEqual(m.eof(from: .client, partnerOutputEmpty: false), .shutdownWhenDrained(.upstream))
        XCTAssertFalse(m.isPaused(.client))
        XCTAssertEqual(m.eof(from: .client, partnerOutputEmpty: true), .none)
        XCTAssertEqual(m.outputFilled(toward: .upstream), .none, "a side at EOF is not paused")
        XCTAssertEqual(m.outputDrained(toward: .upstream, empty: true), .shutdownWrite(.upstream),
                       "the pending shutdown wins over a resume")
    }

    // MARK: ends

    func testErrorsAndTimeoutsCloseOnce() {
        var m = established()
        XCTAssertEqual(m.failed(.upstream), .close(.upstreamError))
        XCTAssertEqual(m.failed(.client), .none)
        XCTAssertEqual(m.idleTimedOut(), .none)
        XCTAssertTrue(m.wasEstablished)

        var c = established()
        _ = c.eof(from: .client, partnerOutputEmpty: true)
        XCTAssertEqual(c.failed(.client), .close(.clientError))

        var i = established()
        XCTAssertEqual(i.idleTimedOut(), .close(.idleTimeout))
        XCTAssertEqual(i.state, .closed(.idleTimeout))

        var d = established()
        XCTAssertEqual(d.drainTimedOut(), .close(.drainTimeout))
        XCTAssertEqual(d.eof(from: .client, partnerOutputEmpty: true), .none, "nothing after the close")

        var x = established()
        XCTAssertEqual(x.cancelled(), .close(.cancelled))
        XCTAssertEqual(x.cancelled(), .none, "cancelled twice: closed once")
        var early = TunnelMachine()
        XCTAssertEqual(early.cancelled(), .close(.cancelled), "cancelled while connecting")
    }

    func testLoggingIsClaimedOnce() {
        var m = TunnelMachine()
        XCTAssertTrue(m.claimLogging())
        XCTAssertFalse(m.claimLogging())
    }

    func testEndLabels() {
        XCTAssertEqual(TunnelEnd.allCases.map(\.rawValue),
                       ["closed", "connect-failed", "client-error", "upstream-error", "idle-timeout", "drain-timeout",
                        "cancelled"])
        XCTAssertTrue(TunnelEnd.closed.isClean)
        XCTAssertFalse(TunnelEnd.idleTimeout.isClean)
    }
}
