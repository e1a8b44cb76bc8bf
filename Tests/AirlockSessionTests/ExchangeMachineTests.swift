import AirlockSession
import AirlockWire
import XCTest

/// The exchange machine with no sockets: each test reads like the protocol step it checks.
final class ExchangeMachineTests: XCTestCase {
    private func get() -> ExchangeMachine { ExchangeMachine(method: .get, requestHasBody: false) }
    private func post() -> ExchangeMachine { ExchangeMachine(method: .post, requestHasBody: true) }

    /// A body read whole for the route's validator: a cut resumes into the buffer (nothing went
    /// to the client); an accepted rest goes on buffering, a refused one (or no connection, or
    /// no attempt) is answered, since the client has seen nothing.
    func testACutWhileBufferingForTheValidatorResumesIntoTheBuffer() {
        func buffering() -> ExchangeMachine {
            var m = get()
            _ = m.upstreamReady(reused: false)
            XCTAssertEqual(m.responseHeadReceived(status: 200, validates: true), .validateResponse)
            XCTAssertEqual(m.responseHeadJudged(.needsBody(overLimit: false), .enforce), .bufferResponseBody)
            return m
        }
        var m = buffering()
        XCTAssertEqual(m.upstreamCutMidBody(.closed, resumable: true), .resumeDownload)
        XCTAssertEqual(m.validation, .resumingBuffer)
        XCTAssertTrue(m.isResuming)
        XCTAssertTrue(m.awaitingUpstreamHead)
        XCTAssertFalse(m.responseHeadSent, "the client has seen nothing")
        XCTAssertEqual(m.resumedHeadReceived(status: 206, accepted: true), .bufferResponseBody)
        XCTAssertEqual(m.validation, .buffering)
        XCTAssertEqual(m.responseBodyEnded(), .runBodyValidator, "the validator judges the whole body")

        var refused = buffering()
        _ = refused.upstreamCutMidBody(.closed, resumable: true)
        XCTAssertEqual(refused.resumedHeadReceived(status: 200, accepted: false), .respondError(.closed))
        XCTAssertEqual(refused.response, .answered)
        var noAddress = buffering()
        _ = noAddress.upstreamCutMidBody(.closed, resumable: true)
        XCTAssertEqual(noAddress.connectFailed(moreAddresses: false), .respondError(.refused))
        var notResumable = buffering()
        XCTAssertEqual(notResumable.upstreamCutMidBody(.timeout, resumable: false), .respondError(.timeout))
    }

    // MARK: the response cache (issue #21)

    /// A cached answer takes the place of an upstream response: before any head went to the
    /// client (also after an upstream 304 refreshed the stored one), never after.
    func testTheCacheAnswersOnlyBeforeAnyHeadWasSent() {
        var m = get()
        XCTAssertEqual(m.answeredFromCache(), .deliverCachedResponse, "a hit: no upstream at all")
        XCTAssertTrue(m.responseHeadSent)
        XCTAssertEqual(m.responseComplete(), .finishExchange)
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .park)

        var revalidated = get()
        _ = revalidated.upstreamReady(reused: false)
        XCTAssertEqual(revalidated.answeredFromCache(), .deliverCachedResponse, "the upstream's 304 freshened it")

        var relaying = get()
        _ = relaying.upstreamReady(reused: false)
        _ = relaying.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(relaying.answeredFromCache(), .none, "a head already went to the client")
        XCTAssertEqual(relaying.response, .relaying)
    }

    /// A malformed client body after the upstream answered early and its head was relayed: an
    /// error answer behind that head would corrupt the response, so the client's response is
    /// cut instead (before any head it is answered, after the whole response the request fails).
    func testAMalformedBodyAfterARelayedHeadCutsTheResponse() {
        var m = post()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: false), .writeResponseHead)
        XCTAssertEqual(m.requestBodyFailed(), .truncateClient)
        XCTAssertEqual(m.response, .truncated)
        var early = post()
        _ = early.upstreamReady(reused: false)
        XCTAssertEqual(early.requestBodyFailed(), .respondClientError, "no head yet: answered")
    }

    // MARK: resuming a download (issue #21)

    /// A GET relaying its body when the upstream breaks: with an attempt left it resumes
    /// (`.resuming`, the client still has the head and what came), a connection for the rest
    /// sends the range request, an accepted 206 continues the body, and the exchange ends as
    /// any other. Interim heads on the resumed request are dropped.
    func testACutGetResumesAndAnAcceptedRestContinuesTheBody() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: false), .writeResponseHead)
        XCTAssertEqual(m.upstreamCutMidBody(.closed, resumable: true), .resumeDownload)
        XCTAssertEqual(m.response, .resuming)
        XCTAssertEqual(m.resumes, 1)
        XCTAssertTrue(m.responseHeadSent, "the client has the head")
        XCTAssertTrue(m.awaitingUpstreamHead)
        XCTAssertFalse(m.awaitingResponseHead, "not a first head: its relay decisions are done")
        XCTAssertFalse(m.isFinished)
        XCTAssertEqual(TaskState.derive(m, upstreamReady: false, suspended: false, cancelled: false), .receiving)
        XCTAssertEqual(m.upstreamReady(reused: true), .sendRequestHead, "the range request")
        XCTAssertEqual(m.resumedHeadReceived(status: 100, accepted: false), .absorbInterim)
        XCTAssertEqual(m.resumedHeadReceived(status: 206, accepted: true), .continueResumedBody)
        XCTAssertEqual(m.response, .relaying)
        XCTAssertEqual(m.upstreamCutMidBody(.timeout, resumable: true), .resumeDownload, "a second cut, a second attempt")
        XCTAssertEqual(m.resumes, 2)
        XCTAssertEqual(m.resumedHeadReceived(status: 206, accepted: true), .continueResumedBody)
        XCTAssertEqual(m.responseComplete(), .finishExchange)
        XCTAssertEqual(m.resumedHeadReceived(status: 206, accepted: true), .none, "nothing is being resumed")
    }

    /// Every way a resume does not happen ends as a truncation the client can detect: no plan
    /// (or no attempt left), a refused rest (200, another ETag: `accepted` false), a 101, no
    /// connection for the rest, a failure of its connection, the deadline, the client leaving.
    func testEveryRefusedResumeCutsTheClientsResponse() {
        func resuming() -> ExchangeMachine {
            var m = get()
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            XCTAssertEqual(m.upstreamCutMidBody(.closed, resumable: true), .resumeDownload)
            return m
        }
        var notResumable = get()
        _ = notResumable.upstreamReady(reused: false)
        _ = notResumable.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(notResumable.upstreamCutMidBody(.closed, resumable: false), .truncateClient)
        XCTAssertEqual(notResumable.response, .truncated)
        XCTAssertEqual(notResumable.resumes, 0)

        var refused = resuming()
        XCTAssertEqual(refused.resumedHeadReceived(status: 200, accepted: false), .truncateClient)
        XCTAssertEqual(refused.response, .truncated)
        var switching = resuming()
        XCTAssertEqual(switching.resumedHeadReceived(status: 101, accepted: false), .truncateClient)
        var noAddress = resuming()
        XCTAssertEqual(noAddress.connectFailed(moreAddresses: true), .connectNextAddress, "another address may have the rest")
        XCTAssertEqual(noAddress.connectFailed(moreAddresses: false), .truncateClient)
        XCTAssertEqual(noAddress.response, .truncated)
        var exhausted = resuming()
        XCTAssertEqual(exhausted.upstreamCutMidBody(.closed, resumable: false), .truncateClient)
        var untrusted = resuming()
        XCTAssertEqual(untrusted.upstreamFailed(.untrusted), .truncateClient)
        var late = resuming()
        XCTAssertEqual(late.deadlinePassed(), .truncateClient)
        var gone = resuming()
        XCTAssertEqual(gone.clientGone(), .abort)
        XCTAssertEqual(gone.response, .truncated, "it saw part of the response")

        // Only a whole request is resumed, and only while its body is being relayed.
        var upload = post()
        _ = upload.upstreamReady(reused: false)
        _ = upload.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(upload.upstreamCutMidBody(.closed, resumable: true), .truncateClient, "its body is still going up")
        var early = get()
        _ = early.upstreamReady(reused: false)
        XCTAssertEqual(early.upstreamCutMidBody(.closed, resumable: true), .respondError(.closed),
                       "no head yet: an upstream failure like any other")
    }

    // MARK: the ordinary path

    func testGetWithoutBodyRelaysAndParks() {
        var m = get()
        XCTAssertEqual(m.request, .complete, "a request without a body is whole from the start")
        XCTAssertEqual(m.upstreamReady(reused: false), .sendRequestHead)
        XCTAssertEqual(m.attempts, 1)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: false), .writeResponseHead)
        XCTAssertTrue(m.responseHeadSent)
        XCTAssertEqual(m.responseComplete(), .finishExchange)
        XCTAssertTrue(m.isFinished)
        XCTAssertEqual(m.reuseDecision(upstreamKeepAlive: true, bodyReadToEnd: true, buffersEmpty: true), .park)
    }

    func testPostStreamsItsBodyThenCompletes() {
        var m = post()
        XCTAssertEqual(m.request, .bodyPending)
        XCTAssertFalse(m.requestBodyDone)
        XCTAssertEqual(m.upstreamReady(reused: true), .sendRequestHead)
        XCTAssertEqual(m.request, .streamingBody)
        XCTAssertEqual(m.requestBodyComplete(), .none, "the response is still to come")
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
        XCTAssertEqual(bad.requestBodyFailed(), .failRequest, "the client has its response: no answer, the request failed")
        XCTAssertFalse(bad.judgingRestOfRequestBody)
        XCTAssertEqual(TaskState.derive(bad, upstreamReady: false, suspended: false, cancelled: false), .failed,
                       "a malformed body after the response is the client's error")

        var good = post()
        _ = good.upstreamReady(reused: false)
        _ = good.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(good.responseComplete(), .judgeRestOfRequestBody)
        XCTAssertEqual(good.requestBodyComplete(), .finishExchange, "the rest was good: the exchange ends")
        XCTAssertFalse(good.judgingRestOfRequestBody)
        XCTAssertEqual(TaskState.derive(good, upstreamReady: false, suspended: false, cancelled: false), .completed)

        var whole = post()
        _ = whole.upstreamReady(reused: false)
        XCTAssertEqual(whole.requestBodyComplete(), .none)
        _ = whole.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(whole.responseComplete(), .finishExchange, "the body was whole: the exchange ends with its response")
        XCTAssertFalse(whole.judgingRestOfRequestBody)
        var plain = get()
        _ = plain.upstreamReady(reused: false)
        _ = plain.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(plain.responseComplete(), .finishExchange)
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
        XCTAssertEqual(done.responseComplete(), .finishExchange)
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
        XCTAssertEqual(m.responseHeadJudged(.accepted, .enforce), .writeResponseHead)
        XCTAssertTrue(m.responseHeadSent)
        XCTAssertEqual(m.response, .relaying)
    }

    func testRejectedResponseIsAnsweredByTheGateway() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 404, validates: true)
        XCTAssertEqual(m.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: false), .answer(keepAlive: true))
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
        XCTAssertEqual(spoke.upstreamBytesArrived(), .none)
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
        XCTAssertEqual(m.upstreamBytesArrived(), .none)
        XCTAssertEqual(m.upstreamFailed(.closed), .truncateClient)
        XCTAssertEqual(m.response, .truncated)
        XCTAssertTrue(m.responseHeadSent)
    }

    func testUpstreamFailingWhileValidatingIsAnsweredNotTruncated() {
        var m = get()
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 200, validates: true)
        XCTAssertEqual(m.upstreamBytesArrived(), .none)
        XCTAssertEqual(m.upstreamFailed(.closed), .respondError(.closed))
        XCTAssertEqual(m.response, .answered)
    }

    // MARK: the client side

    func testHalfCloseAfterAWholeRequestIsStillAnswered() {
        var m = get()
        XCTAssertEqual(m.clientHalfClosed(), .keepServingHalfClosedClient, "even before the upstream is ready")
        var p = post()
        _ = p.upstreamReady(reused: false)
        XCTAssertEqual(p.requestBodyComplete(), .none)
        XCTAssertEqual(p.clientHalfClosed(), .keepServingHalfClosedClient)
    }

    func testHalfCloseMidBodyRelaysWhatArrivedThenDecides() {
        var m = post()
        XCTAssertEqual(m.clientHalfClosed(), .relayBufferedBody, "the body may have arrived with the close")
        XCTAssertEqual(m.request, .bodyPending, "nothing is decided yet")
        // The buffered bytes completed the body once the upstream was ready:
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.requestBodyComplete(), .none)
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
        XCTAssertEqual(m.requestBodyComplete(), .none)
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
        XCTAssertEqual(m.requestBodyComplete(), .none)
        XCTAssertEqual(m.clientHalfClosed(), .keepServingHalfClosedClient)
        XCTAssertEqual(m.responseHeadReceived(status: 201, validates: false), .writeResponseHead)
        XCTAssertEqual(m.responseComplete(), .finishExchange)
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
        XCTAssertEqual(m.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: false), .answer(keepAlive: true))   // the validator rejected the buffered body
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
        XCTAssertEqual(m.responseComplete(), .finishExchange)
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

    // MARK: connecting (issue #19: the next address is the machine's decision)

    func testARefusedConnectDialsTheNextAddressThenAnswers502() {
        var m = get()
        XCTAssertEqual(m.connectFailed(moreAddresses: true), .connectNextAddress)
        XCTAssertEqual(m.response, .awaitingHead, "nothing is answered while an address is left")
        XCTAssertEqual(m.connectFailed(moreAddresses: true), .connectNextAddress)
        XCTAssertEqual(m.connectFailed(moreAddresses: false), .respondError(.refused), "the last address refused")
        XCTAssertEqual(m.response, .answered)
        XCTAssertEqual(m.connectFailed(moreAddresses: true), .none, "answered: a late report changes nothing")
        XCTAssertEqual(m.attempts, 0, "no connection was ever ready")
    }

    func testARefusedConnectIsNeverRetriedOnAFreshConnection() {
        var m = get()
        _ = m.upstreamReady(reused: true)
        XCTAssertEqual(m.upstreamFailed(.closed), .retryOnNewConnection)
        XCTAssertEqual(m.connectFailed(moreAddresses: false), .respondError(.refused),
                       "the retry's connect was refused: answered, not retried again")
    }

    func testFailureStatusesAre504ForATimeoutAnd502Otherwise() {
        XCTAssertEqual(ExchangeMachine.UpstreamFailure.timeout.status, 504)
        for f in [ExchangeMachine.UpstreamFailure.refused, .closed, .untrusted, .malformed] {
            XCTAssertEqual(f.status, 502, "\(f)")
        }
    }

    // MARK: the upload's read-timeout exemption (issue #19: decided by the machine)

    func testTheReadTimeoutWaitsWhileTheUploadStillMoves() {
        var m = post()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.upstreamReadTimedOut(bodyBytesSent: 65_536), .waitForUpload, "the body is still going up")
        XCTAssertEqual(m.bodyBytesAtReadTimeout, 65_536)
        XCTAssertEqual(m.upstreamReadTimedOut(bodyBytesSent: 131_072), .waitForUpload, "and it moved again")
        XCTAssertEqual(m.upstreamReadTimedOut(bodyBytesSent: 131_072), .respondError(.timeout),
                       "a timeout with no byte sent since the last: the upload stalled")
        XCTAssertEqual(m.response, .answered)
    }

    func testTheReadTimeoutIsATimeoutOnceTheBodyIsUpOrTheHeadCame() {
        var sent = post()
        _ = sent.upstreamReady(reused: false)
        XCTAssertEqual(sent.requestBodyComplete(), .none)
        XCTAssertEqual(sent.upstreamReadTimedOut(bodyBytesSent: 10), .respondError(.timeout), "the upstream owes its answer")
        var noBody = get()
        _ = noBody.upstreamReady(reused: true)
        XCTAssertEqual(noBody.upstreamReadTimedOut(bodyBytesSent: 0), .respondError(.timeout), "never retried: slow is not gone")
        var connecting = post()
        XCTAssertEqual(connecting.upstreamReadTimedOut(bodyBytesSent: 0), .respondError(.timeout),
                       "a connect timeout: no byte of the body went anywhere")
        var early = post()
        _ = early.upstreamReady(reused: false)
        _ = early.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(early.upstreamReadTimedOut(bodyBytesSent: 10), .truncateClient, "after the head: the relay is cut")
    }

    // MARK: 101 (issue #19: asked once)

    func testSwitchingProtocolsIsAnsweredOnceAndNothingFollows() {
        var m = get()
        _ = m.upstreamReady(reused: true)
        XCTAssertEqual(m.responseHeadReceived(status: 101, validates: true), .respondError(.malformed),
                       "not retried, not validated: answered as malformed")
        XCTAssertEqual(m.validation, .none)
        XCTAssertEqual(m.upstreamFailed(.malformed), .none, "a second report of the same failure changes nothing")
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: false), .none, "no head after the answer")
    }

    // MARK: validation (issue #19: its phases and enforce / report-only are the machine's)

    private func validating() -> ExchangeMachine {
        var m = get()
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(m.responseHeadReceived(status: 200, validates: true), .validateResponse)
        XCTAssertEqual(m.validation, .judgingHead)
        return m
    }

    func testAHeadAcceptedOnSightStreams() {
        var m = validating()
        XCTAssertEqual(m.responseHeadJudged(.accepted, .enforce), .writeResponseHead)
        XCTAssertEqual(m.validation, .none)
        XCTAssertEqual(m.response, .relaying)
        XCTAssertEqual(m.responseHeadJudged(.rejected, .enforce), .none, "judged once")
    }

    func testAHeadRejectedInEnforceModeIsDrainedThenAnsweredWithTheReject() {
        var m = validating()
        XCTAssertEqual(m.responseHeadJudged(.rejected, .enforce), .drainRejectedBody)
        XCTAssertEqual(m.validation, .drainingRejected)
        XCTAssertFalse(m.responseHeadSent, "nothing reaches the client")
        XCTAssertEqual(m.responseBodyEnded(), .answerReject(upstreamReusable: true), "read whole: the upstream may be parked")
        XCTAssertEqual(m.response, .answered)
    }

    func testAHeadRejectedInReportOnlyModeStreamsSampled() {
        var m = validating()
        XCTAssertEqual(m.responseHeadJudged(.rejected, .reportOnly), .writeResponseHead)
        XCTAssertEqual(m.validation, .sampling)
        XCTAssertEqual(m.enforcement, .reportOnly)
        XCTAssertTrue(m.responseHeadSent)
        XCTAssertEqual(m.upstreamFailed(.closed), .truncateClient, "it streams: a failure cuts it like any relay")
    }

    func testABufferedBodyIsValidatedThenDeliveredOrRejected() {
        var accepted = validating()
        XCTAssertEqual(accepted.responseHeadJudged(.needsBody(overLimit: false), .enforce), .bufferResponseBody)
        XCTAssertEqual(accepted.validation, .buffering)
        XCTAssertEqual(accepted.responseBodyEnded(), .runBodyValidator)
        XCTAssertEqual(accepted.responseBodyJudged(accepted: true), .deliverValidatedBody)
        XCTAssertEqual(accepted.validation, .delivering)
        XCTAssertTrue(accepted.responseHeadSent)
        XCTAssertEqual(accepted.responseComplete(), .finishExchange)

        var enforced = validating()
        _ = enforced.responseHeadJudged(.needsBody(overLimit: false), .enforce)
        XCTAssertEqual(enforced.responseBodyEnded(), .runBodyValidator)
        XCTAssertEqual(enforced.responseBodyJudged(accepted: false), .answerReject(upstreamReusable: true))
        XCTAssertEqual(enforced.response, .answered)

        var reported = validating()
        _ = reported.responseHeadJudged(.needsBody(overLimit: false), .reportOnly)
        XCTAssertEqual(reported.responseBodyEnded(), .runBodyValidator)
        XCTAssertEqual(reported.responseBodyJudged(accepted: false), .deliverValidatedBody, "report-only: delivered untouched")
        XCTAssertEqual(reported.responseBodyJudged(accepted: false), .none, "judged once")
    }

    func testABodyOverTheLimitIsRejectedOrRelayedByMode() {
        var declared = validating()
        XCTAssertEqual(declared.responseHeadJudged(.needsBody(overLimit: true), .enforce), .answerReject(upstreamReusable: false),
                       "declared too large: not a byte is read, the upstream is closed")
        var declaredReport = validating()
        XCTAssertEqual(declaredReport.responseHeadJudged(.needsBody(overLimit: true), .reportOnly), .relayBodyOverLimit)
        XCTAssertEqual(declaredReport.validation, .sampling)
        XCTAssertTrue(declaredReport.responseHeadSent)

        var growing = validating()
        _ = growing.responseHeadJudged(.needsBody(overLimit: false), .enforce)
        XCTAssertEqual(growing.responseBodyOverLimit(), .answerReject(upstreamReusable: false))
        var growingReport = validating()
        _ = growingReport.responseHeadJudged(.needsBody(overLimit: false), .reportOnly)
        XCTAssertEqual(growingReport.responseBodyOverLimit(), .relayBodyOverLimit)
        XCTAssertEqual(growingReport.responseBodyOverLimit(), .none, "relaying already")
        var draining = validating()
        _ = draining.responseHeadJudged(.rejected, .enforce)
        XCTAssertEqual(draining.responseBodyOverLimit(), .answerReject(upstreamReusable: false),
                       "a rejected body too long to drain: answered, the upstream closed")
    }

    func testAnUpstreamFailingDuringValidationIsAnsweredAsTheRejectOrTheFailure() {
        var draining = validating()
        _ = draining.responseHeadJudged(.rejected, .enforce)
        XCTAssertEqual(draining.upstreamFailed(.closed), .answerReject(upstreamReusable: false),
                       "rejected on its head: still the reject, with the sample read so far")
        var buffering = validating()
        _ = buffering.responseHeadJudged(.needsBody(overLimit: false), .enforce)
        XCTAssertEqual(buffering.upstreamFailed(.timeout), .respondError(.timeout))
        XCTAssertEqual(buffering.responseBodyEnded(), .none, "answered: the body's end changes nothing")
    }

    // MARK: the keep-alive rule (issue #19: once)

    func testTheKeepAliveRuleNeedsEveryCondition() {
        XCTAssertTrue(ExchangeMachine.clientKeepAlive(requestKeepAlive: true, requestWhole: true, clientContinues: true))
        XCTAssertFalse(ExchangeMachine.clientKeepAlive(requestKeepAlive: false, requestWhole: true, clientContinues: true))
        XCTAssertFalse(ExchangeMachine.clientKeepAlive(requestKeepAlive: true, requestWhole: false, clientContinues: true))
        XCTAssertFalse(ExchangeMachine.clientKeepAlive(requestKeepAlive: true, requestWhole: true, clientContinues: false))
        XCTAssertFalse(ExchangeMachine.clientKeepAlive(requestKeepAlive: true, requestWhole: true, clientContinues: true,
                                                       closeDelimited: true))
        XCTAssertFalse(ExchangeMachine.clientKeepAlive(requestKeepAlive: true, requestWhole: true, clientContinues: true,
                                                       mustClose: true))
        var m = post()
        XCTAssertFalse(m.clientKeepAlive(requestKeepAlive: true, clientContinues: true), "the body is not read yet")
        _ = m.upstreamReady(reused: false)
        _ = m.requestBodyComplete()
        XCTAssertTrue(m.clientKeepAlive(requestKeepAlive: true, clientContinues: true))
    }

    func testTheGatewaysOwnAnswerCarriesTheKeepAliveDecision() {
        var whole = get()
        XCTAssertEqual(whole.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: false),
                       .answer(keepAlive: true))
        XCTAssertEqual(whole.response, .answered)
        var untrustworthy = get()
        XCTAssertEqual(untrustworthy.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: true),
                       .answer(keepAlive: false))
        var unread = post()
        XCTAssertEqual(unread.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: false),
                       .answer(keepAlive: false), "the body was never read: the connection cannot carry another request")
        var draining = get()
        XCTAssertEqual(draining.answeredByGateway(requestKeepAlive: true, clientContinues: false, mustClose: false),
                       .answer(keepAlive: false))
    }

    // MARK: the client's body (issue #19: every event returns the action)

    func testAMalformedBodyIsAnsweredBeforeTheResponseAndFailsTheRequestAfter() {
        var before = post()
        _ = before.upstreamReady(reused: false)
        XCTAssertEqual(before.requestBodyFailed(), .respondClientError)
        XCTAssertEqual(before.request, .failed)
        var collected = post()
        XCTAssertEqual(collected.requestBodyFailed(), .respondClientError, "collected for a serializer, no upstream yet")
    }

    func testABufferedBodyIsWholeAtOnce() {
        var m = post()
        XCTAssertEqual(m.requestBodyBuffered(), .none)
        XCTAssertEqual(m.request, .complete)
        XCTAssertEqual(m.upstreamReady(reused: false), .sendRequestHead)
        XCTAssertEqual(m.request, .complete, "nothing of it streams")
    }

    func testTheRestOfABodyAfterTheResponseEndsTheExchangeWhenCutOffOrLate() {
        var cut = post()
        _ = cut.upstreamReady(reused: false)
        _ = cut.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(cut.responseComplete(), .judgeRestOfRequestBody)
        XCTAssertEqual(cut.requestBodyCutOff(), .finishExchange, "the client has its response: completed, not aborted")
        var late = post()
        _ = late.upstreamReady(reused: false)
        _ = late.responseHeadReceived(status: 200, validates: false)
        _ = late.responseComplete()
        XCTAssertEqual(late.restOfRequestBodyTimedOut(), .finishExchange)
        var beforeResponse = post()
        _ = beforeResponse.upstreamReady(reused: false)
        XCTAssertEqual(beforeResponse.restOfRequestBodyTimedOut(), .none, "no rest is being judged")
        XCTAssertEqual(beforeResponse.requestBodyCutOff(), .abort, "no response yet: the client is gone")
    }

    // MARK: every action

    /// Every `Action` case with an event sequence that produces it. The switch has no
    /// `default:`, so a new case does not compile until it has its scenario here.
    func testEveryActionIsProducedBySomeEvent() {
        let all: [ExchangeMachine.Action] = [
            .none, .sendRequestHead, .connectNextAddress, .retryOnNewConnection, .waitForUpload, .respondError(.closed),
            .answer(keepAlive: true), .respondClientError, .failRequest, .truncateClient, .writeResponseHead,
            .validateResponse, .bufferResponseBody, .drainRejectedBody, .runBodyValidator, .deliverValidatedBody,
            .relayBodyOverLimit, .answerReject(upstreamReusable: true), .absorbInterim, .keepServingHalfClosedClient,
            .relayBufferedBody, .abort, .pauseClientReads, .resumeClientReads, .pauseUpstreamReads, .resumeUpstreamReads,
            .judgeRestOfRequestBody, .finishExchange, .resumeDownload, .continueResumedBody, .deliverCachedResponse,
        ]
        for action in all {
            XCTAssertEqual(produce(action), action, "\(action)")
        }
    }

    private func produce(_ action: ExchangeMachine.Action) -> ExchangeMachine.Action {
        var m = get()
        var p = post()
        switch action {
        case .none: return m.upstreamOutputDrained()
        case .sendRequestHead: return m.upstreamReady(reused: false)
        case .connectNextAddress: return m.connectFailed(moreAddresses: true)
        case .retryOnNewConnection:
            _ = m.upstreamReady(reused: true)
            return m.upstreamFailed(.closed)
        case .waitForUpload:
            _ = p.upstreamReady(reused: false)
            return p.upstreamReadTimedOut(bodyBytesSent: 1)
        case .respondError:
            _ = m.upstreamReady(reused: false)
            return m.upstreamFailed(.closed)
        case .answer: return m.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: false)
        case .respondClientError: return p.requestBodyFailed()
        case .failRequest:
            _ = p.upstreamReady(reused: false)
            _ = p.responseHeadReceived(status: 200, validates: false)
            _ = p.responseComplete()
            return p.requestBodyFailed()
        case .truncateClient:
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            return m.upstreamFailed(.closed)
        case .writeResponseHead:
            _ = m.upstreamReady(reused: false)
            return m.responseHeadReceived(status: 200, validates: false)
        case .validateResponse:
            _ = m.upstreamReady(reused: false)
            return m.responseHeadReceived(status: 200, validates: true)
        case .bufferResponseBody:
            m = validating()
            return m.responseHeadJudged(.needsBody(overLimit: false), .enforce)
        case .drainRejectedBody:
            m = validating()
            return m.responseHeadJudged(.rejected, .enforce)
        case .runBodyValidator:
            m = validating()
            _ = m.responseHeadJudged(.needsBody(overLimit: false), .enforce)
            return m.responseBodyEnded()
        case .deliverValidatedBody:
            m = validating()
            _ = m.responseHeadJudged(.needsBody(overLimit: false), .enforce)
            return m.responseBodyJudged(accepted: true)
        case .relayBodyOverLimit:
            m = validating()
            return m.responseHeadJudged(.needsBody(overLimit: true), .reportOnly)
        case .answerReject:
            m = validating()
            _ = m.responseHeadJudged(.rejected, .enforce)
            return m.responseBodyEnded()
        case .absorbInterim:
            _ = m.upstreamReady(reused: false)
            return m.responseHeadReceived(status: 100, validates: false)
        case .keepServingHalfClosedClient: return m.clientHalfClosed()
        case .relayBufferedBody: return p.clientHalfClosed()
        case .abort: return m.clientGone()
        case .pauseClientReads:
            _ = p.upstreamReady(reused: false)
            return p.upstreamOutputFilled()
        case .resumeClientReads:
            _ = p.upstreamReady(reused: false)
            _ = p.upstreamOutputFilled()
            return p.upstreamOutputDrained()
        case .pauseUpstreamReads:
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            return m.clientOutputFilled()
        case .resumeUpstreamReads:
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            _ = m.clientOutputFilled()
            return m.clientOutputDrained()
        case .judgeRestOfRequestBody:
            _ = p.upstreamReady(reused: false)
            _ = p.responseHeadReceived(status: 200, validates: false)
            return p.responseComplete()
        case .finishExchange:
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            return m.responseComplete()
        case .resumeDownload:
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            return m.upstreamCutMidBody(.closed, resumable: true)
        case .continueResumedBody:
            _ = m.upstreamReady(reused: false)
            _ = m.responseHeadReceived(status: 200, validates: false)
            _ = m.upstreamCutMidBody(.closed, resumable: true)
            return m.resumedHeadReceived(status: 206, accepted: true)
        case .deliverCachedResponse:
            return m.answeredFromCache()
        }
    }
}
