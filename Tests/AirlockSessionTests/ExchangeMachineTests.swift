import AirlockSession
import AirlockWire
import XCTest

/// The exchange machine with no sockets: each test reads like the protocol step it checks.
final class ExchangeMachineTests: XCTestCase {
    private func get() -> ExchangeMachine { ExchangeMachine(method: .get, requestHasBody: false) }
    private func post() -> ExchangeMachine { ExchangeMachine(method: .post, requestHasBody: true) }

    // MARK: the ordinary path

    func testGetWithoutBodyRelaysAndParks() {
        var m = get()
        XCTAssertEqual(m.request, .complete, "a request without a body is whole from the start")
        XCTAssertEqual(m.upstreamReady(reused: false), .sendRequestHead)
        XCTAssertEqual(m.attempts, 1)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: false), .writeResponseHead)
        XCTAssertTrue(m.responseHeadSent)
        m.responseComplete()
        XCTAssertTrue(m.isFinished)
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .park)
    }

    func testPostStreamsItsBodyThenCompletes() {
        var m = post()
        XCTAssertEqual(m.request, .bodyPending)
        XCTAssertFalse(m.requestBodyDone)
        XCTAssertEqual(m.upstreamReady(reused: true), .sendRequestHead)
        XCTAssertEqual(m.request, .streamingBody)
        m.requestBodyComplete()
        XCTAssertTrue(m.requestBodyDone)
    }

    /// Issue #18 (2.6): an upstream that answered before reading the body. The whole response
    /// does not end the exchange while the client's body is still coming: its rest is judged
    /// (read, never sent); the upstream connection is closed, never parked; a malformed rest
    /// makes the exchange failed, a good one completed.
    func testAResponseBeforeTheWholeBodyLeavesTheRestToBeJudged() {
        var bad = post()
        _ = bad.upstreamReady(reused: false)
        XCTAssertEqual(bad.responseHeadReceived(status: 200, validates: false), .writeResponseHead)
        XCTAssertEqual(bad.responseComplete(), .judgeRestOfRequestBody)
        XCTAssertTrue(bad.judgingRestOfRequestBody)
        XCTAssertTrue(bad.isFinished, "the client has the whole response")
        XCTAssertEqual(bad.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true),
                       .close(.requestIncomplete), "the upstream saw part of the body: never reused")
        bad.requestBodyFailed()
        XCTAssertFalse(bad.judgingRestOfRequestBody)
        XCTAssertEqual(TaskState.derive(bad, upstreamReady: false, suspended: false, cancelled: false), .failed,
                       "a malformed body after the response is the client's error")

        var good = post()
        _ = good.upstreamReady(reused: false)
        _ = good.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(good.responseComplete(), .judgeRestOfRequestBody)
        good.requestBodyComplete()
        XCTAssertFalse(good.judgingRestOfRequestBody)
        XCTAssertEqual(TaskState.derive(good, upstreamReady: false, suspended: false, cancelled: false), .completed)

        var whole = post()
        _ = whole.upstreamReady(reused: false)
        whole.requestBodyComplete()
        _ = whole.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(whole.responseComplete(), .none, "the body was whole: the exchange ends with its response")
        XCTAssertFalse(whole.judgingRestOfRequestBody)
        var plain = get()
        _ = plain.upstreamReady(reused: false)
        _ = plain.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(plain.responseComplete(), .none)
    }

    // MARK: the exchange's deadline (request.timeout)

    func testDeadlineAnswersBeforeTheHeadCutsAfterItAndIsNeverRetried() {
        var waiting = get()
        _ = waiting.upstreamReady(reused: true)
        XCTAssertEqual(waiting.deadlinePassed(), .respondError(.timeout), "nothing reached the client: answered, not retried")
        XCTAssertEqual(waiting.response, .answered)
        var validating = get()
        _ = validating.upstreamReady(reused: false)
        _ = validating.responseHeadReceived(status: 200, validates: true)
        XCTAssertEqual(validating.deadlinePassed(), .respondError(.timeout), "a held head never reached the client")
        var relaying = get()
        _ = relaying.upstreamReady(reused: false)
        _ = relaying.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(relaying.deadlinePassed(), .truncateClient)
        XCTAssertEqual(relaying.response, .truncated)
        XCTAssertEqual(relaying.deadlinePassed(), .none, "an exchange that ended is left alone")
        var done = get()
        done.responseComplete()
        XCTAssertEqual(done.deadlinePassed(), .none)
    }

    func testInterimResponsesAreAbsorbedAndSwitchingProtocolsIsMalformed() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.responseHeadReceived(status: 100, validates: false), .absorbInterim)
        XCTAssertEqual(m.responseHeadReceived(status: 103, validates: false), .absorbInterim)
        XCTAssertEqual(m.response, .awaitingHead)
        var n = get()
        _ = n.upstreamReady(reused: false)
        XCTAssertEqual(n.responseHeadReceived(status: 101, validates: false), .respondError(.malformed))
        XCTAssertEqual(n.response, .answered)
    }

    func testValidationHoldsTheHeadUntilReleased() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: true), .validateResponse)
        XCTAssertFalse(m.responseHeadSent, "nothing reaches the client while the body is validated")
        m.validatorReleasedHead()
        XCTAssertTrue(m.responseHeadSent)
        XCTAssertEqual(m.response, .relaying)
    }

    func testRejectedResponseIsAnsweredByTheGateway() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 404, validates: true)
        m.answeredByGateway()
        XCTAssertEqual(m.response, .answered)
        XCTAssertFalse(m.responseHeadSent)
        XCTAssertEqual(m.upstreamFailed(.closed), .none, "a late upstream failure changes nothing once answered")
    }

    // MARK: upstream failures and the one retry

    func testPooledConnectionClosedBeforeTheHeadIsRetriedOnceForAnIdempotentRequest() {
        var m = get()
        _ = m.upstreamReady(reused: true)
        XCTAssertEqual(m.upstreamFailed(.closed), .retryOnNewConnection)
        XCTAssertEqual(m.upstreamReady(reused: true), .sendRequestHead)
        XCTAssertEqual(m.attempts, 2)
        XCTAssertEqual(m.upstreamFailed(.closed), .respondError(.closed), "never twice")
    }

    func testNoRetryOnAFreshConnectionAfterBytesOnTimeoutOrForABody() {
        var fresh = get()
        _ = fresh.upstreamReady(reused: false)
        XCTAssertEqual(fresh.upstreamFailed(.closed), .respondError(.closed), "a new connection failing is the upstream's answer")

        var spoke = get()
        _ = spoke.upstreamReady(reused: true)
        spoke.upstreamBytesArrived()
        XCTAssertEqual(spoke.upstreamFailed(.closed), .respondError(.closed), "after a response byte: never")

        var slow = get()
        _ = slow.upstreamReady(reused: true)
        XCTAssertEqual(slow.upstreamFailed(.timeout), .respondError(.timeout), "slow is not gone")

        var upload = ExchangeMachine(method: .put, requestHasBody: true)
        _ = upload.upstreamReady(reused: true)
        XCTAssertEqual(upload.upstreamFailed(.closed), .respondError(.closed), "a body already sent cannot be replayed")

        var notIdempotent = ExchangeMachine(method: .post, requestHasBody: false)
        _ = notIdempotent.upstreamReady(reused: true)
        XCTAssertEqual(notIdempotent.upstreamFailed(.closed), .respondError(.closed), "POST is not idempotent")
    }

    func testUpstreamClosingMidBodyTruncatesTheClient() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 200, validates: false)
        m.upstreamBytesArrived()
        XCTAssertEqual(m.upstreamFailed(.closed), .truncateClient)
        XCTAssertEqual(m.response, .truncated)
        XCTAssertTrue(m.responseHeadSent)
    }

    func testUpstreamFailingWhileValidatingIsAnsweredNotTruncated() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 200, validates: true)
        m.upstreamBytesArrived()
        XCTAssertEqual(m.upstreamFailed(.closed), .respondError(.closed))
        XCTAssertEqual(m.response, .answered)
    }

    // MARK: the client side

    func testHalfCloseAfterAWholeRequestIsStillAnswered() {
        var m = get()
        XCTAssertEqual(m.clientHalfClosed(), .keepServingHalfClosedClient, "even before the upstream is ready")
        var p = post()
        _ = p.upstreamReady(reused: false)
        p.requestBodyComplete()
        XCTAssertEqual(p.clientHalfClosed(), .keepServingHalfClosedClient)
    }

    func testHalfCloseMidBodyRelaysWhatArrivedThenDecides() {
        var m = post()
        XCTAssertEqual(m.clientHalfClosed(), .relayBufferedBody, "the body may have arrived with the close")
        XCTAssertEqual(m.request, .bodyPending, "nothing is decided yet")
        // The buffered bytes completed the body once the upstream was ready:
        _ = m.upstreamReady(reused: false)
        m.requestBodyComplete()
        XCTAssertTrue(m.requestBodyDone)
        // Or they did not:
        var cut = post()
        _ = cut.clientHalfClosed()
        _ = cut.upstreamReady(reused: false)
        XCTAssertEqual(cut.requestBodyCutOff(), .abort)
        XCTAssertEqual(cut.request, .failed)
        XCTAssertEqual(cut.response, .failed)
    }

    func testClientAbortMidResponseCountsAsTruncatedNotUnanswered() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(m.clientGone(), .abort)
        XCTAssertEqual(m.response, .truncated, "it saw the head: its status is logged, not 499")
        XCTAssertTrue(m.responseHeadSent)
        var early = post()
        _ = early.upstreamReady(reused: false)
        XCTAssertEqual(early.clientGone(), .abort)
        XCTAssertEqual(early.response, .failed)
        XCTAssertFalse(early.responseHeadSent)
    }

    // MARK: the reuse decision

    func testReuseDecisionClosesForEveryReasonInOrder() {
        var m = post()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: false, buffersEmpty: true), .close(.bodyAbandoned))
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: false, bodyReadToEnd: true, buffersEmpty: true), .close(.upstreamNotKeepAlive))
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .close(.requestIncomplete),
                       "an early answer while the body was still going up: the upstream may wait for the rest")
        m.requestBodyComplete()
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: false), .close(.unreadBytes))
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .park)
    }

    func testIdempotentMethodsAreRFC9110s() {
        let idempotent: [Method] = [.get, .head, .put, .delete, .options, .trace]
        let other: [Method] = [.post, .patch, .connect, .other("PURGE")]
        for m in idempotent { XCTAssertTrue(ExchangeMachine(method: m, requestHasBody: false).isIdempotent, "\(m)") }
        for m in other { XCTAssertFalse(ExchangeMachine(method: m, requestHasBody: false).isIdempotent, "\(m)") }
    }

    // MARK: the awkward ones

    func testClientAbortingMidBodyFailsTheRequestAndLeavesNothingToAnswer() {
        var m = post()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.request, .streamingBody)
        XCTAssertEqual(m.clientGone(), .abort)
        XCTAssertEqual(m.request, .failed)
        XCTAssertEqual(m.response, .failed, "nobody is left to answer")
        XCTAssertTrue(m.isFinished)
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true),
                       .close(.requestIncomplete), "the upstream still expects body bytes")
        XCTAssertEqual(m.upstreamFailed(.closed), .none, "a late upstream close changes nothing")
    }

    func testUpstreamClosingBeforeTheHeadOnAFreshConnectionIsAnswered() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.upstreamFailed(.closed), .respondError(.closed), "a fresh connection is not retried")
        XCTAssertEqual(m.response, .answered)
        XCTAssertFalse(m.responseHeadSent)
    }

    func testUpstreamRefusedOrUntrustedIsAnsweredWithItsOwnFailure() {
        for failure: ExchangeMachine.UpstreamFailure in [.refused, .timeout, .untrusted, .malformed] {
            var m = get()
            _ = m.upstreamReady(reused: true)
            XCTAssertEqual(m.upstreamFailed(failure), .respondError(failure), "\(failure)")
        }
    }

    func testHalfCloseAfterAWholeRequestThenTheResponseCompletes() {
        var m = post()
        _ = m.upstreamReady(reused: false)
        m.requestBodyComplete()
        XCTAssertEqual(m.clientHalfClosed(), .keepServingHalfClosedClient)
        XCTAssertEqual(m.responseHeadReceived(status: 201, validates: false), .writeResponseHead)
        m.responseComplete()
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .park,
                       "the client's half-close does not spoil the upstream connection")
    }

    /// A rejected response on a keep-alive connection with another request pipelined behind
    /// it: the exchange ends answered (its upstream parked when the body was read whole), and
    /// the connection's lifecycle goes back to heads for the next request.
    func testPipelinedRequestBehindARejectedResponseIsServedNext() {
        var lifecycle = ClientLifecycle()
        var m = get()
        lifecycle.dispatched()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: true), .validateResponse)
        m.answeredByGateway()   // the validator rejected the buffered body
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .park)
        XCTAssertTrue(m.claimLogging())
        XCTAssertTrue(lifecycle.carriesAnotherRequest(inputBuffered: true))
        lifecycle.exchangeEnded()
        XCTAssertEqual(lifecycle.phase, .awaitingHead)
        var next = get()
        lifecycle.dispatched()
        XCTAssertEqual(lifecycle.phase, .forwarding)
        XCTAssertEqual(next.upstreamReady(reused: true), .sendRequestHead)
        XCTAssertFalse(next.logged, "the next exchange has its own logging turn")
    }

    func testDrainDuringAnExchangeFinishesItThenCloses() {
        var lifecycle = ClientLifecycle()
        var m = get()
        lifecycle.dispatched()
        _ = m.upstreamReady(reused: false)
        lifecycle.drain()
        XCTAssertFalse(lifecycle.carriesAnotherRequest(inputBuffered: false), "the response says Connection: close")
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: false), .writeResponseHead)
        m.responseComplete()
        lifecycle.exchangeEnded()
        XCTAssertEqual(lifecycle.whenIdle(inputBuffered: 0, idleFor: .seconds(1), drainGrace: .milliseconds(100)), .close)
    }

    // MARK: the logging phase

    func testLoggingRunsExactlyOnceWhicheverWayTheExchangeEnds() {
        var a = get()
        _ = a.upstreamReady(reused: false)
        _ = a.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(a.clientGone(), .abort)
        XCTAssertTrue(a.claimLogging(), "the first end reported is logged")
        XCTAssertFalse(a.claimLogging(), "a second end (the drain timeout, an admin cancel) is not")
        XCTAssertTrue(a.logged)
        var b = get()
        XCTAssertFalse(b.logged)
        XCTAssertTrue(b.claimLogging())
        XCTAssertFalse(b.claimLogging())
    }

    // MARK: backpressure

    func testAFullUpstreamHoldsTheClientsReadsUntilItDrains() {
        var m = post()
        XCTAssertEqual(m.upstreamOutputFilled(), .none, "no body is streaming before the upstream is ready")
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.upstreamOutputFilled(), .pauseClientReads)
        XCTAssertTrue(m.isSuspended)
        XCTAssertEqual(m.upstreamOutputFilled(), .none, "paused once")
        XCTAssertEqual(m.upstreamOutputDrained(), .resumeClientReads)
        XCTAssertFalse(m.isSuspended)
        XCTAssertEqual(m.upstreamOutputDrained(), .none, "resumed once")
    }

    func testASlowClientHoldsTheUpstreamsReadsUntilItReads() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.clientOutputFilled(), .none, "nothing is relayed before the head")
        _ = m.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(m.clientOutputFilled(), .pauseUpstreamReads)
        XCTAssertEqual(m.upstreamReads, .held)
        XCTAssertTrue(m.isSuspended)
        XCTAssertEqual(m.clientOutputDrained(), .resumeUpstreamReads)
        XCTAssertEqual(m.clientOutputDrained(), .none)
        XCTAssertFalse(m.isSuspended)
    }

    func testBothSidesHeldAtOnceStaySuspendedUntilBothFlow() {
        var m = post()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 200, validates: false)   // an early answer while the body streams
        XCTAssertEqual(m.upstreamOutputFilled(), .pauseClientReads)
        XCTAssertEqual(m.clientOutputFilled(), .pauseUpstreamReads)
        XCTAssertEqual(m.upstreamOutputDrained(), .resumeClientReads)
        XCTAssertTrue(m.isSuspended, "the upstream's reads are still held")
        XCTAssertEqual(m.clientOutputDrained(), .resumeUpstreamReads)
        XCTAssertFalse(m.isSuspended)
    }
}
