public import AirlockWire

/// The phases of one proxied exchange and the decisions taken at each, with no I/O: the
/// connection code reports what happened (an event) and performs what the machine returns
/// (an `Action`), in the style of async-http-client's `HTTP1ConnectionStateMachine`. The
/// machine is the single place that decides when a request may be retried, what an upstream
/// failure means for the client, whether a half-closed client is still owed an answer, and
/// whether an upstream connection is reused (`ReuseDecision`).
///
/// The request and the response overlap (an upstream may answer before the body is sent), so
/// the state has two halves: `request` for what goes up and `response` for what comes down.
public struct ExchangeMachine: Sendable, Equatable {
    public enum RequestState: Sendable, Equatable {
        case bodyPending          // a body to send, no upstream ready yet → .streamingBody, .failed
        case streamingBody        // head sent, body bytes relayed as they come → .complete, .failed
        case complete             // the whole request is read (a request without a body starts here); final
        case failed               // malformed or cut off by the client; final
    }

    public enum ResponseState: Sendable, Equatable {
        case awaitingHead         // nothing from the upstream yet (interim 1xx absorbed) → .validating, .relaying, .answered, .failed
        case validating           // head held back while the body is read for a validator → .relaying, .complete, .answered
        case relaying             // head written to the client, body streaming → .complete, .truncated, .resuming
        case resuming             // the upstream broke mid-body; a range request for the rest is on its way → .relaying, .truncated
        case complete             // the client has the whole response; final
        case truncated            // the client saw part of a response and a close; final
        case answered             // the client got Airlock's own answer (an error or a reject); final
        case failed               // nothing reached the client and nobody is left to answer (client gone); final
    }

    /// What the upstream did wrong, as the connection code saw it.
    public enum UpstreamFailure: Sendable, Equatable {
        case refused              // connect failed (every address)
        case closed               // closed or reset
        case timeout              // connect, read or write timeout
        case untrusted            // TLS handshake or the security policy failed
        case malformed            // a response that is not HTTP/1.1

        /// The status the client is answered with: 504 for a timeout, 502 otherwise.
        public var status: Int { self == .timeout ? 504 : 502 }
    }

    /// How an upstream connection ends its part in this exchange.
    public enum ReuseDecision: Sendable, Equatable {
        case park                 // back to the worker's pool
        case close(Reason)        // never reused

        public enum Reason: Sendable, Equatable {
            case upstreamNotKeepAlive   // the response said close (or HTTP/1.0 without keep-alive)
            case requestIncomplete      // the upstream may still expect body bytes
            case unreadBytes            // bytes left in either direction
            case bodyAbandoned          // the response body was not read to its end
        }
    }

    /// Whether one side's reads are held for backpressure (libevent's le-proxy: a side stops
    /// reading while its partner's output is above the high-water mark, and resumes once that
    /// output drained below the low one).
    public enum Flow: Sendable, Equatable {
        case flowing              // → .held (the partner's output filled up)
        case held                 // → .flowing (the partner's output drained)
    }

    /// Where the route's response validator stands (`response: validating` or after it). The
    /// validator's own verdicts are the connection code's to compute; what follows from them
    /// (enforce or report-only, reject, deliver, relay) is decided here.
    public enum Validation: Sendable, Equatable {
        case none                 // no validator on this response (or it accepted the head)
        case judgingHead          // the head waits for the response filter's verdict → .none, .buffering, .drainingRejected, .sampling
        case buffering            // the body is read whole for the validator, up to its limit → .delivering, .sampling, .resumingBuffer, (answered)
        case resumingBuffer       // the upstream broke while buffering; a range request for the rest is on its way → .buffering, (answered)
        case drainingRejected     // enforce, rejected on the head: the body is read for the record's sample → (answered)
        case sampling             // report-only reject: the response streams as usual, its first bytes kept → final
        case delivering           // the validated body goes to the client at its pace → final
    }

    /// The response filter's verdict on a head (`validateResponse`).
    public enum HeadVerdict: Sendable, Equatable {
        case accepted             // nothing more to check: stream it
        case rejected             // final on the head (no body needed, or the status alone fails)
        case needsBody(overLimit: Bool)   // the body validator must see the body; `overLimit`: declared too large
    }

    /// A route's validation mode (`response.mode`).
    public enum Enforcement: Sendable, Equatable {
        case enforce              // a rejected response is answered with `reject_status`
        case reportOnly           // it is recorded and relayed untouched
    }

    public enum Action: Sendable, Equatable {
        case none
        case sendRequestHead                 // the connection is ready: head, then the body as it comes
        case connectNextAddress              // this address refused: dial the next resolved one
        case retryOnNewConnection            // a pooled connection died before answering: once more, fresh
        case waitForUpload                   // the upstream's read timeout while the body still moves up: it owes no answer yet
        case respondError(UpstreamFailure)   // answer the client with the failure's status (`UpstreamFailure.status`) and JSON
        case answer(keepAlive: Bool)         // write Airlock's own answer; `keepAlive`: the client connection carries on
        case respondClientError              // the client's body is malformed or too large: answer it, close the upstream
        case failRequest                     // the client has its whole response and its body's rest proved malformed
        case truncateClient                  // the client has part of the response: close without finishing it
        case writeResponseHead               // relay the head now, then the body
        case validateResponse                // hold the head; ask the response filter (`responseHeadJudged`)
        case bufferResponseBody              // read the body whole for the body validator
        case drainRejectedBody               // enforce, rejected on the head: read the body for its sample
        case runBodyValidator                // the buffered body is whole: validate it (`responseBodyJudged`)
        case deliverValidatedBody            // the head with the buffered body's length, then that body
        case relayBodyOverLimit              // report-only, over `max_body_bytes`: relay what was read, stream the rest
        case answerReject(upstreamReusable: Bool)  // enforce: `reject_status` and the reject's JSON
        case absorbInterim                   // a 1xx: ours to drop, wait for the final head
        case keepServingHalfClosedClient     // the client half-closed after a whole request: still answer it
        case relayBufferedBody               // half-closed mid-body: relay what arrived with the close, then decide
        case abort                           // the client is gone mid-exchange: drop both sides (499)
        case pauseClientReads                // the upstream's output is full: stop reading the client's body
        case resumeClientReads               // it drained: read the client again
        case pauseUpstreamReads              // the client's output is full: stop reading the upstream
        case resumeUpstreamReads             // it drained: read the upstream again
        case judgeRestOfRequestBody          // the response is whole, the client's body is not: read the rest, send none of it
        case finishExchange                  // the client has the whole response and the request is over: the exchange ends
        case resumeDownload                  // the upstream broke mid-body, the response is resumable: ask a connection for the rest (`Range`, `If-Range`)
        case continueResumedBody             // the resumed response continues the client's body: relay it
        case deliverCachedResponse           // the route's cache answers: write its head and body, no upstream
    }

    public let method: Method
    public let requestHasBody: Bool
    public private(set) var request: RequestState
    public private(set) var response: ResponseState = .awaitingHead
    /// The route's validator, once a head went to it (`validateResponse`).
    public private(set) var validation: Validation = .none
    /// The route's validation mode, known once the response filter judged the head.
    public private(set) var enforcement: Enforcement = .enforce
    /// Connections tried so far (a retry makes it 2).
    public private(set) var attempts = 0
    /// Whether the connection now serving the exchange came from the pool.
    public private(set) var onReusedConnection = false
    /// Whether any byte of a response arrived on the current connection.
    public private(set) var upstreamBytesSeen = false
    /// Request body bytes sent when the upstream's read timeout last fired during the upload
    /// (`upstreamReadTimedOut`).
    public private(set) var bodyBytesAtReadTimeout: UInt64 = 0
    /// Resumed requests made for this response (`upstreamCutMidBody`).
    public private(set) var resumes = 0
    /// Whether the logging phase has run for this exchange.
    public private(set) var logged = false
    /// The client's reads: held while the upstream's output is full.
    public private(set) var clientReads: Flow = .flowing
    /// The upstream's reads: held while the client's output is full.
    public private(set) var upstreamReads: Flow = .flowing

    public init(method: Method, requestHasBody: Bool) {
        self.method = method
        self.requestHasBody = requestHasBody
        self.request = requestHasBody ? .bodyPending : .complete
    }

    // MARK: derived

    public var requestBodyDone: Bool { request == .complete }
    /// No final response head yet (interim 1xx heads do not count).
    public var awaitingResponseHead: Bool { response == .awaitingHead }
    /// A head is expected from the upstream: the response's, or a resumed one's (`.resuming`).
    public var awaitingUpstreamHead: Bool { response == .awaitingHead || isResuming }
    /// A resumed request waits for its head: the client has part of the body (`.resuming`), or
    /// the body was being read whole for the route's validator (`.resumingBuffer`).
    public var isResuming: Bool { response == .resuming || validation == .resumingBuffer }
    /// Backpressure holds the exchange: either side's reads are paused (a task's `suspended`).
    public var isSuspended: Bool { clientReads == .held || upstreamReads == .held }
    /// The client has seen the response's head (relayed or delivered after validation).
    public var responseHeadSent: Bool {
        response == .relaying || response == .resuming || response == .complete || response == .truncated
    }
    public var isFinished: Bool {
        switch response {
        case .complete, .truncated, .answered, .failed: return true
        case .awaitingHead, .validating, .relaying, .resuming: return false
        }
    }

    /// RFC 9110 9.2.2: a request the client may have sent twice without harm.
    public var isIdempotent: Bool {
        switch method {
        case .get, .head, .put, .delete, .options, .trace: return true
        case .post, .patch, .connect, .other: return false
        }
    }

    // MARK: the keep-alive rule

    /// The one rule for whether the client connection carries another request after this
    /// response: the client asked for keep-alive, its whole request was read, it can still send
    /// (`clientContinues`: not draining, not half-closed with nothing more sent), the response
    /// is not delimited by the close, and the answer does not make the connection untrustworthy.
    public static func clientKeepAlive(requestKeepAlive: Bool, requestWhole: Bool, clientContinues: Bool,
                                       closeDelimited: Bool = false, mustClose: Bool = false) -> Bool {
        requestKeepAlive && requestWhole && clientContinues && !closeDelimited && !mustClose
    }

    /// `clientKeepAlive` for this exchange's request as it stands now.
    public func clientKeepAlive(requestKeepAlive: Bool, clientContinues: Bool, closeDelimited: Bool = false,
                                mustClose: Bool = false) -> Bool {
        Self.clientKeepAlive(requestKeepAlive: requestKeepAlive, requestWhole: requestBodyDone,
                             clientContinues: clientContinues, closeDelimited: closeDelimited, mustClose: mustClose)
    }

    // MARK: events: connecting and sending

    /// A connection is ready for this exchange (new, or taken from the pool).
    public mutating func upstreamReady(reused: Bool) -> Action {
        attempts += 1
        onReusedConnection = reused
        upstreamBytesSeen = false
        if request == .bodyPending { request = .streamingBody }
        return .sendRequestHead
    }

    /// A connect to one resolved address failed (refused, unreachable, no socket). The next
    /// address is dialled while there is one; after the last the client is answered 502.
    /// A refused connect is never retried on the same address.
    public mutating func connectFailed(moreAddresses: Bool) -> Action {
        guard response == .awaitingHead || isResuming else { return .none }
        if moreAddresses { return .connectNextAddress }
        if response == .resuming {   // no connection for the rest: the client's response is cut
            response = .truncated
            return .truncateClient
        }
        response = .answered
        return .respondError(.refused)
    }

    /// The request body's last byte went upstream. If the client already has its whole
    /// response (`judgeRestOfRequestBody`), the exchange ends here.
    public mutating func requestBodyComplete() -> Action {
        guard request == .streamingBody else { return .none }
        request = .complete
        return response == .complete ? .finishExchange : .none
    }

    /// The gateway read the client's whole body itself (a request serializer rebuilds it):
    /// nothing of it streams; the rebuilt body goes up with the head.
    public mutating func requestBodyBuffered() -> Action {
        if request == .bodyPending { request = .complete }
        return .none
    }

    /// The client's body was malformed (or over the limit): nothing more goes upstream. Before
    /// any response head reached the client it is answered; once a relayed head went out
    /// (the upstream answered early) the client's response is cut, since an answer written
    /// behind that head would corrupt it; after the whole response, the exchange fails as the
    /// client's error (its rest was being judged).
    public mutating func requestBodyFailed() -> Action {
        request = .failed
        switch response {
        case .complete:
            return .failRequest
        case .relaying, .resuming:
            response = .truncated
            return .truncateClient
        case .awaitingHead, .validating, .truncated, .answered, .failed:
            return .respondClientError
        }
    }

    public mutating func upstreamBytesArrived() -> Action {
        upstreamBytesSeen = true
        return .none
    }

    // MARK: events: the response

    /// A response head arrived. `validates`: the route has a validator that wants to see it.
    public mutating func responseHeadReceived(status: Int, validates: Bool) -> Action {
        guard response == .awaitingHead else { return .none }
        if status == 101 { return failUpstream(.malformed) }   // no Upgrade was asked for
        if status < 200 { return .absorbInterim }
        if validates {
            response = .validating
            validation = .judgingHead
            return .validateResponse
        }
        response = .relaying
        return .writeResponseHead
    }

    /// The response filter judged the head (`validateResponse`). Enforce vs report-only is
    /// decided here: a head rejected in enforce mode is answered with the reject (after its
    /// body is read for the sample), in report-only mode it streams and is recorded.
    public mutating func responseHeadJudged(_ verdict: HeadVerdict, _ mode: Enforcement) -> Action {
        guard response == .validating, validation == .judgingHead else { return .none }
        enforcement = mode
        switch verdict {
        case .accepted:
            validation = .none
            response = .relaying
            return .writeResponseHead
        case .rejected where mode == .enforce:
            validation = .drainingRejected
            return .drainRejectedBody
        case .rejected:
            validation = .sampling
            response = .relaying
            return .writeResponseHead
        case .needsBody(let overLimit):
            validation = .buffering
            return overLimit ? responseBodyOverLimit() : .bufferResponseBody
        }
    }

    /// The body being read for validation ended (its last byte, or a close that ends it).
    public mutating func responseBodyEnded() -> Action {
        guard response == .validating else { return .none }   // answered meanwhile
        switch validation {
        case .drainingRejected:
            response = .answered
            return .answerReject(upstreamReusable: true)
        case .buffering:
            return .runBodyValidator
        case .none, .judgingHead, .sampling, .delivering, .resumingBuffer:
            return .none
        }
    }

    /// The body validator's verdict on the whole buffered body (`runBodyValidator`).
    public mutating func responseBodyJudged(accepted: Bool) -> Action {
        guard response == .validating, validation == .buffering else { return .none }
        if !accepted && enforcement == .enforce {
            response = .answered
            return .answerReject(upstreamReusable: true)
        }
        validation = .delivering   // accepted, or report-only: untouched
        response = .relaying
        return .deliverValidatedBody
    }

    /// The body read for validation passed `max_body_bytes` (declared, or as it came). Enforce:
    /// the reject is answered and the upstream closed (its body is not read on). Report-only:
    /// what was read is relayed and the rest streams.
    public mutating func responseBodyOverLimit() -> Action {
        guard response == .validating else { return .none }
        switch validation {
        case .buffering where enforcement == .reportOnly:
            validation = .sampling
            response = .relaying
            return .relayBodyOverLimit
        case .buffering, .drainingRejected:
            response = .answered
            return .answerReject(upstreamReusable: false)
        case .none, .judgingHead, .sampling, .delivering, .resumingBuffer:
            return .none
        }
    }

    /// The client has the whole response. The exchange ends there (`.finishExchange`), unless the
    /// client's body is still coming (an upstream that answered before reading it all): then the
    /// rest is read, never sent (the upstream connection closes, `requestIncomplete`), and
    /// judged before the exchange is logged (`.judgeRestOfRequestBody`): a malformed body is
    /// the client's error even after the upstream's 200 (`requestBodyFailed`).
    public mutating func responseComplete() -> Action {
        response = .complete
        return request == .streamingBody ? .judgeRestOfRequestBody : .finishExchange
    }

    /// Whether the rest of the client's body is being read after the whole response
    /// (`.judgeRestOfRequestBody`).
    public var judgingRestOfRequestBody: Bool { response == .complete && request == .streamingBody }

    /// Airlock answers the client itself (an error before any response byte, or a reject).
    /// `mustClose`: the answer makes the connection untrustworthy. The answer says whether the
    /// client connection carries on (`clientKeepAlive`).
    public mutating func answeredByGateway(requestKeepAlive: Bool, clientContinues: Bool, mustClose: Bool) -> Action {
        if !isFinished { response = .answered }
        return .answer(keepAlive: clientKeepAlive(requestKeepAlive: requestKeepAlive, clientContinues: clientContinues,
                                                  mustClose: mustClose))
    }

    // MARK: events: the response cache

    /// The route's cache answers this request (a fresh stored response, one an upstream 304
    /// just freshened, or its own 504 for `only-if-cached`): the client gets it whole from
    /// memory (`.deliverCachedResponse`, then `responseComplete`). Only before any response
    /// head went to the client.
    public mutating func answeredFromCache() -> Action {
        guard response == .awaitingHead || response == .validating else { return .none }
        response = .relaying
        validation = .none
        return .deliverCachedResponse
    }

    // MARK: events: resuming a download

    /// The upstream connection broke while the response body was relayed (closed, reset, timed
    /// out), or while a resumed request waited for its head. `resumable`: the response may be
    /// continued (a strong validator, ranges not refused, an attempt left: `ResumePlan`), which
    /// only a whole request can be (nothing of it is left to send). Otherwise the client's
    /// response is cut, so that the client sees an incomplete response, never a spliced one.
    public mutating func upstreamCutMidBody(_ failure: UpstreamFailure, resumable: Bool) -> Action {
        if response == .validating && (validation == .buffering || validation == .resumingBuffer) {
            // Nothing reached the client yet: the validator's body goes on from the rest, or the
            // failure is answered as before.
            guard resumable else { return failUpstream(failure) }
            validation = .resumingBuffer
            resumes += 1
            return .resumeDownload
        }
        guard response == .relaying || response == .resuming else { return failUpstream(failure) }
        guard resumable, request == .complete else {
            response = .truncated
            return .truncateClient
        }
        response = .resuming
        resumes += 1
        return .resumeDownload
    }

    /// A head arrived for the resumed request. An interim head is dropped; a final one
    /// continues the client's body only when it is the rest of the same representation
    /// (`accepted`: `ResumePlan.accept`); anything else cuts the client's response.
    public mutating func resumedHeadReceived(status: Int, accepted: Bool) -> Action {
        guard isResuming else { return .none }
        if status < 200 && status != 101 { return .absorbInterim }
        upstreamBytesSeen = true
        if validation == .resumingBuffer {   // the rest goes on into the validator's buffer
            guard accepted else {
                response = .answered
                return .respondError(.closed)
            }
            validation = .buffering
            return .bufferResponseBody
        }
        guard accepted else {
            response = .truncated
            return .truncateClient
        }
        response = .relaying
        return .continueResumedBody
    }

    // MARK: events: failures

    /// The upstream failed. Before any response byte reached the client the client is answered
    /// (or, once, the request is retried); after, the client's response is cut off.
    public mutating func upstreamFailed(_ failure: UpstreamFailure) -> Action {
        failUpstream(failure)
    }

    /// The upstream's read timeout fired. While no head has come and the request body is still
    /// moving up (`bodyBytesSent` grew since the last such timeout), the upstream owes no
    /// answer yet: the wait goes on (nginx's proxy_read_timeout counts the silence after the
    /// request; a stalled upload is the write timeout's). Otherwise it is a timeout.
    public mutating func upstreamReadTimedOut(bodyBytesSent: UInt64) -> Action {
        if response == .awaitingHead, !requestBodyDone, bodyBytesSent != bodyBytesAtReadTimeout {
            bodyBytesAtReadTimeout = bodyBytesSent
            return .waitForUpload
        }
        return failUpstream(.timeout)
    }

    private mutating func failUpstream(_ failure: UpstreamFailure) -> Action {
        switch response {
        case .relaying, .resuming:
            response = .truncated
            return .truncateClient
        case .complete, .truncated, .answered, .failed:
            return .none
        case .validating where validation == .drainingRejected:
            // Nothing reached the client: a response rejected on its head is still answered
            // as the reject (its sample is what was read).
            response = .answered
            return .answerReject(upstreamReusable: false)
        case .awaitingHead, .validating:
            break
        }
        // A pooled connection the upstream had closed meanwhile: nothing was answered, so an
        // idempotent request without a body (nothing to replay) is tried once more on a fresh
        // connection. Never after a response byte, never after a timeout (the upstream is slow,
        // not gone), never twice.
        let retry = failure == .closed && response == .awaitingHead && onReusedConnection && !upstreamBytesSeen
            && isIdempotent && !requestHasBody && attempts < 2
        if retry { return .retryOnNewConnection }
        response = .answered
        return .respondError(failure)
    }

    /// The exchange's own deadline passed (a route's `request.timeout`). Before any response
    /// byte reached the client it is answered; after, its response is cut off. Never retried.
    public mutating func deadlinePassed() -> Action {
        switch response {
        case .relaying, .resuming:
            response = .truncated
            return .truncateClient
        case .awaitingHead, .validating:
            response = .answered
            return .respondError(.timeout)
        case .complete, .truncated, .answered, .failed:
            return .none
        }
    }

    /// The client closed its sending side. After a whole request it is still answered. Mid-body,
    /// bytes that arrived with the close may still complete the body: they are relayed first
    /// (now, or once the upstream is ready), and `requestBodyCutOff` follows if they do not.
    public mutating func clientHalfClosed() -> Action {
        request == .complete ? .keepServingHalfClosedClient : .relayBufferedBody
    }

    /// Everything the half-closed client sent is decoded and the body is still incomplete. If
    /// the client already has its whole response (the rest was being judged), the exchange
    /// ends completed; otherwise the client is gone.
    public mutating func requestBodyCutOff() -> Action {
        response == .complete ? .finishExchange : clientGone()
    }

    /// The rest of the client's body did not come within `header_timeout` after the whole
    /// response (`judgeRestOfRequestBody`): the client has its response; the exchange ends.
    public mutating func restOfRequestBodyTimedOut() -> Action {
        judgingRestOfRequestBody ? .finishExchange : .none
    }

    /// The client is gone (closed mid-body, reset, stopped reading, cancelled, drain timeout).
    public mutating func clientGone() -> Action {
        switch response {
        case .relaying, .resuming: response = .truncated   // it saw part of the response
        case .awaitingHead, .validating: response = .failed
        case .complete, .truncated, .answered, .failed: break
        }
        if request != .complete { request = .failed }
        return .abort
    }

    // MARK: events: backpressure

    /// The upstream's output (request body bytes not yet sent) passed the high-water mark.
    public mutating func upstreamOutputFilled() -> Action {
        guard clientReads == .flowing, request == .streamingBody else { return .none }
        clientReads = .held
        return .pauseClientReads
    }

    /// The upstream took the bytes queued for it: the client may send more.
    public mutating func upstreamOutputDrained() -> Action {
        guard clientReads == .held else { return .none }
        clientReads = .flowing
        return .resumeClientReads
    }

    /// The client's output (response bytes it has not read yet) passed the high-water mark.
    public mutating func clientOutputFilled() -> Action {
        guard upstreamReads == .flowing, response == .relaying else { return .none }
        upstreamReads = .held
        return .pauseUpstreamReads
    }

    /// The client read what was queued for it: the upstream may send more.
    public mutating func clientOutputDrained() -> Action {
        guard upstreamReads == .held else { return .none }
        upstreamReads = .flowing
        return .resumeUpstreamReads
    }

    // MARK: the logging phase

    /// The logging phase's turn: true the first time only, so that an exchange is logged
    /// exactly once whichever way it ends (and however many ends are reported).
    public mutating func claimLogging() -> Bool {
        guard !logged else { return false }
        logged = true
        return true
    }

    // MARK: the reuse decision

    /// The one place that decides whether an upstream connection goes back to the pool once
    /// its part in the exchange is over.
    /// - `upstreamKeepAlive`: the response allowed keep-alive.
    /// - `bodyReadToEnd`: the response body was read to its end (not abandoned).
    /// - `buffersEmpty`: nothing unread from the upstream and nothing unsent to it.
    public func reuseDecision(upstreamKeepAlive: Bool, bodyReadToEnd: Bool, buffersEmpty: Bool) -> ReuseDecision {
        if !bodyReadToEnd { return .close(.bodyAbandoned) }
        if !upstreamKeepAlive { return .close(.upstreamNotKeepAlive) }
        if request != .complete { return .close(.requestIncomplete) }
        if !buffersEmpty { return .close(.unreadBytes) }
        return .park
    }
}
