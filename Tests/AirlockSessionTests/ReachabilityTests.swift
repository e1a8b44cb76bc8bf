import AirlockSession
import XCTest

/// The reachability state machine: probes decide either way at once; a refused connection
/// marks the upstream unreachable at once; connect timeouts only after
/// `passiveFailureThreshold` in a row; each change is reported once, with its time.
final class ReachabilityTests: XCTestCase {
    func testProbesMoveBetweenReachableAndUnreachable() {
        var r = Reachability()
        XCTAssertEqual(r.state, .unknown)
        XCTAssertEqual(r.record(.probeSucceeded, now: 10), .init(from: .unknown, to: .reachable, reason: "probe succeeded"))
        XCTAssertNil(r.record(.probeSucceeded, now: 20), "no change, no transition")
        XCTAssertEqual(r.since, 10, "since is when the state began, not the last signal")
        let down = r.record(.probeFailed("connection refused"), now: 30)
        XCTAssertEqual(down?.from, .reachable)
        XCTAssertEqual(down?.to, .unreachable)
        XCTAssertEqual(r.since, 30)
        XCTAssertEqual(r.lastError, "connection refused")
        XCTAssertNil(r.record(.probeFailed("connection refused"), now: 40))
        XCTAssertEqual(r.record(.probeSucceeded, now: 50)?.to, .reachable)
        XCTAssertEqual(r.since, 50)
        XCTAssertEqual(r.lastError, "connection refused", "the last error stays for /upstreams")
    }

    func testRefusedIsUnreachableAtOnceButResetsNeedSeveralInARow() {
        var r = Reachability()
        _ = r.record(.connected, now: 1)
        XCTAssertEqual(r.state, .reachable)
        // The README's number, written out: a threshold of 1 or 2 fails here.
        XCTAssertNil(r.record(.failed("reset"), now: 2), "failure 1 of 3")
        XCTAssertNil(r.record(.failed("reset"), now: 3), "failure 2 of 3")
        XCTAssertEqual(r.state, .reachable)
        XCTAssertEqual(r.record(.failed("reset"), now: 9)?.to, .unreachable, "the third in a row")

        var s = Reachability()
        _ = s.record(.connected, now: 1)
        _ = s.record(.failed("timeout"), now: 2)
        _ = s.record(.connected, now: 3)   // a success in between starts the count again
        _ = s.record(.failed("timeout"), now: 4)
        _ = s.record(.failed("timeout"), now: 5)
        XCTAssertEqual(s.state, .reachable)

        // Timeouts of attempts begun before the last connection came up are history: they
        // neither count nor open the circuit; one begun after it counts again.
        var b = Reachability()
        _ = b.record(.connected, now: 100)
        for i in 0..<5 {
            XCTAssertNil(b.record(.failed("timed out"), now: 2000 + UInt64(i), attemptStarted: 99), "stale timeout \(i)")
        }
        XCTAssertEqual(b.state, .reachable)
        XCTAssertFalse(b.failsFast)
        XCTAssertEqual(b.consecutiveFailures, 0)
        XCTAssertEqual(b.lastError, "timed out", "kept as history")
        XCTAssertEqual(b.lastErrorAt, 2004)
        XCTAssertNil(b.record(.failed("timed out"), now: 3000, attemptStarted: 100), "begun in the same tick as the success: counts")
        XCTAssertNil(b.record(.failed("timed out"), now: 3001, attemptStarted: 150))
        XCTAssertEqual(b.record(.failed("timed out"), now: 3002, attemptStarted: 200)?.to, .unreachable, "three begun after it")
        XCTAssertTrue(b.failsFast)
        // Without a success yet, every timeout counts (nothing is older than it).
        var c = Reachability()
        _ = c.record(.failed("timed out"), now: 10, attemptStarted: 1)
        _ = c.record(.failed("timed out"), now: 11, attemptStarted: 1)
        XCTAssertEqual(c.record(.failed("timed out"), now: 12, attemptStarted: 1)?.to, .unreachable)

        var u = Reachability()
        XCTAssertEqual(u.record(.probeUntrusted("pin-mismatch"), now: 1)?.to, .unreachable)
        XCTAssertEqual(u.lastError, "untrusted: pin-mismatch")
        XCTAssertFalse(u.failsFast, "an untrusted upstream's requests meet the real handshake")
        XCTAssertNil(u.record(.refused("ECONNREFUSED"), now: 2))
        XCTAssertTrue(u.failsFast, "now unreachable for a network reason")

        var t = Reachability()
        _ = t.record(.connected, now: 1)
        XCTAssertFalse(t.failsFast)
        XCTAssertEqual(t.record(.refused("ECONNREFUSED"), now: 2)?.to, .unreachable)
        XCTAssertTrue(t.failsFast)
        XCTAssertEqual(t.record(.connected, now: 3)?.to, .reachable, "a connection that came up restores it")
    }
}

/// The fail-fast circuit (issue #18, 2.3/2.4): no probes needed. A refusal opens it for
/// `retryAfter`; then exactly one request is the trial while the others still fail fast; the
/// trial's connection closes the circuit, its failure opens it again for another `retryAfter`;
/// a trial that never reports is replaced after `retryAfter`.
final class ReachabilityCircuitTests: XCTestCase {
    func testClosedProceedsAndARefusalOpensTheCircuit() {
        var r = Reachability(retryAfter: 1000)
        XCTAssertEqual(r.circuit, .closed)
        XCTAssertEqual(r.admit(now: 0), .proceed, "unknown: requests go upstream")
        XCTAssertFalse(r.failsFast)
        XCTAssertEqual(r.record(.refused("ECONNREFUSED"), now: 100)?.to, .unreachable)
        XCTAssertEqual(r.circuit, .open(until: 1100))
        XCTAssertTrue(r.failsFast)
        XCTAssertEqual(r.admit(now: 100), .failFast)
        XCTAssertEqual(r.admit(now: 1099), .failFast, "until retryAfter has passed")
    }

    func testAfterRetryAfterExactlyOneTrialThenSuccessClosesIt() {
        var r = Reachability(retryAfter: 1000)
        _ = r.record(.refused("ECONNREFUSED"), now: 0)
        XCTAssertEqual(r.admit(now: 1000), .trial)
        XCTAssertEqual(r.circuit, .halfOpen(trialUntil: 2000))
        XCTAssertTrue(r.failsFast)
        XCTAssertEqual(r.admit(now: 1001), .failFast, "one trial at a time")
        XCTAssertEqual(r.admit(now: 1999), .failFast)
        XCTAssertEqual(r.record(.connected, now: 1200)?.to, .reachable, "the trial's connection came up")
        XCTAssertEqual(r.circuit, .closed)
        XCTAssertFalse(r.failsFast)
        XCTAssertEqual(r.admit(now: 1201), .proceed)
    }

    func testAFailedTrialOpensTheCircuitAgain() {
        var r = Reachability(retryAfter: 1000)
        _ = r.record(.refused("ECONNREFUSED"), now: 0)
        XCTAssertEqual(r.admit(now: 1500), .trial)
        XCTAssertNil(r.record(.refused("ECONNREFUSED"), now: 1600), "still unreachable: no transition")
        XCTAssertEqual(r.circuit, .open(until: 2600))
        XCTAssertEqual(r.admit(now: 2599), .failFast)
        XCTAssertEqual(r.admit(now: 2600), .trial)

        // One reset or timeout of a trial is enough (no threshold while unreachable).
        XCTAssertNil(r.record(.failed("connect timed out"), now: 2700))
        XCTAssertEqual(r.circuit, .open(until: 3700))
        XCTAssertEqual(r.admit(now: 3000), .failFast)
    }

    func testATrialThatNeverReportsIsReplacedAfterRetryAfter() {
        var r = Reachability(retryAfter: 1000)
        _ = r.record(.refused("ECONNREFUSED"), now: 0)
        XCTAssertEqual(r.admit(now: 1000), .trial)
        XCTAssertEqual(r.admit(now: 1999), .failFast)
        XCTAssertEqual(r.admit(now: 2000), .trial, "the first trial's client went away before its connect ended")
        XCTAssertEqual(r.circuit, .halfOpen(trialUntil: 3000))
    }

    func testProbesOpenAndCloseTheCircuitAndUntrustedNeverOpensIt() {
        var r = Reachability(retryAfter: 1000)
        _ = r.record(.probeFailed("connection refused"), now: 10)
        XCTAssertEqual(r.circuit, .open(until: 1010))
        _ = r.record(.probeFailed("connection refused"), now: 500)
        XCTAssertEqual(r.circuit, .open(until: 1500), "each failure seen while open restarts the wait")
        _ = r.record(.probeSucceeded, now: 600)
        XCTAssertEqual(r.circuit, .closed)

        var u = Reachability(retryAfter: 1000)
        _ = u.record(.probeUntrusted("pin-mismatch"), now: 1)
        XCTAssertEqual(u.circuit, .closed)
        XCTAssertEqual(u.admit(now: 2), .proceed, "an untrusted upstream's requests meet the real handshake")
    }

    func testResetsBelowTheThresholdKeepTheCircuitClosed() {
        var r = Reachability(retryAfter: 1000)
        _ = r.record(.connected, now: 1)
        XCTAssertNil(r.record(.failed("reset"), now: 2))
        XCTAssertNil(r.record(.failed("reset"), now: 3))
        XCTAssertEqual(r.circuit, .closed)
        XCTAssertEqual(r.admit(now: 4), .proceed)
        XCTAssertEqual(r.record(.failed("reset"), now: 5)?.to, .unreachable, "the third in a row")
        XCTAssertEqual(r.circuit, .open(until: 1005))
    }

    /// `/upstreams` shows `currentError` as `last_error`: nothing current once reachable again;
    /// the failure stays as history (`lastError`, `lastErrorAt`).
    func testTheCurrentErrorIsClearedOnRecovery() {
        var r = Reachability(retryAfter: 1000)
        XCTAssertNil(r.currentError)
        XCTAssertNil(r.lastErrorAt)
        _ = r.record(.refused("ECONNREFUSED"), now: 7)
        XCTAssertEqual(r.currentError, "ECONNREFUSED")
        XCTAssertEqual(r.lastErrorAt, 7)
        _ = r.record(.connected, now: 9)
        XCTAssertNil(r.currentError, "reachable: no current error")
        XCTAssertEqual(r.lastError, "ECONNREFUSED")
        XCTAssertEqual(r.lastErrorAt, 7)
    }
}
