import AirlockConfig
import AirlockIO
import AirlockSession
import AirlockWire

/// What an exchange knows about resuming its download (issue #21), made at the first cut:
/// nothing is computed for a response that is never cut.
final class Resumption {
    /// The plan, when the response proved resumable (`ResumePolicy.plan`).
    var plan: ResumePlan?
    /// Why it is not resumable, when it is not.
    var refusal: ResumeRefusal?
    /// The request sent for the rest: the original with the plan's `Range` and `If-Range`.
    var request: RequestHead?
    /// Whether the upstream of the resumed response is keep-alive (its reuse at the end).
    var upstreamKeepAlive: Bool?
    /// Resumed responses that continued the client's body (the access record's `resumed`).
    var resumed = 0
}

/// Transparent resume of a GET download whose upstream broke mid-body (`routes[].resume`;
/// AFNetworking's `downloadTaskWithResumeData:` done by the proxy for every app): the plan says
/// whether the response can be continued and how (`ResumePolicy`, `ResumePlan`), the machine
/// decides (`upstreamCutMidBody`, `resumedHeadReceived`), and the rest is relayed into the
/// client's body in the framing the client already has. Anything but the exact rest of the same
/// representation cuts the client's response: a truncation it can detect, never a spliced body.
extension Exchange {
    /// The upstream broke while the body was relayed, or while a resumed request waited for its
    /// head: resumed (a connection for the rest, pooled or new, any address) if the plan has an
    /// attempt left, else the client's response is cut.
    func cutMidBody(_ failure: ExchangeMachine.UpstreamFailure, cause: String) {
        dropUpstream()
        let resumable = nextResumeAttempt()
        run(machine.upstreamCutMidBody(failure, resumable: resumable)) {
            // A cut client keeps the status it saw; a body still being read for the validator is answered.
            GatewayError(failure == .timeout ? .upstreamTimeout : .upstreamClosed,
                         status: machine.responseHeadSent ? responseStatus : failure.status, message: cause, source: .upstream)
        }
    }

    /// Body bytes the client or the route's validator already has: where the rest starts.
    private var bodyBytesTaken: UInt64 {
        machine.response == .validating ? UInt64(validation?.payloadBytes ?? 0) : bytesOut
    }

    /// Whether another resumed request may go now; if so its request is kept for
    /// `sendRequestHead` (the upstream request filter writes it like any other).
    private func nextResumeAttempt() -> Bool {
        guard let head = response else { return false }
        let r: Resumption
        if let existing = resumption {
            r = existing
        } else {
            r = Resumption()
            resumption = r
            let policy = ResumePolicy(enabled: route.resume.enabled, maxAttempts: route.resume.maxAttempts)
            switch policy.plan(request: request, response: head) {
            case .resumable(let plan): r.plan = plan
            case .refused(let why): r.refusal = why
            }
        }
        guard var plan = r.plan else {
            countResume(r.refusal?.rawValue ?? ResumeRefusal.disabled.rawValue)
            return false
        }
        let taken = bodyBytesTaken
        switch plan.nextAttempt(relayed: taken) {
        case .success:
            var resumed = request
            resumed.headers = plan.resumedHeaders(request.headers, relayed: taken)
            r.plan = plan
            r.request = resumed
            return true
        case .failure(let why):
            countResume(why.rawValue)
            return false
        }
    }

    /// The head of the resumed request's response. It continues the client's body only when it
    /// is the rest of the same representation (`ResumePlan.accept`); an interim head is dropped.
    func resumedHeadArrived(_ head: ResponseHead) {
        var refusal: ResumeRefusal?
        if head.status >= 200 || head.status == 101, let r = resumption {
            // (`accept` answers nil for the rest: not `plan?.accept(…) ?? refusal`, which reads nil as no plan.)
            if let plan = r.plan { refusal = plan.accept(head, relayed: bodyBytesTaken) } else { refusal = .unexpectedStatus }
            if let why = refusal {
                countResume(why.rawValue)
            } else {
                r.resumed += 1
                r.upstreamKeepAlive = head.keepAlive
                responseDecoder = BodyDecoder(framing: head.framing(requestMethod: request.method))
                countResume("resumed")
            }
        }
        run(machine.resumedHeadReceived(status: head.status, accepted: refusal == nil)) {
            GatewayError(.upstreamClosed, status: machine.responseHeadSent ? responseStatus : 502,
                         message: "upstream broke mid-body and its resumed response is not the rest of the body ("
                             + (refusal?.rawValue ?? "") + ")", source: .upstream)
        }
        worker.recycle(head.headers)
    }

    /// The connection of a resumed request failed before its head: a close or a timeout is
    /// another cut (the next attempt, if any); a refused connect and TLS failures take the
    /// usual path (`upstreamFailed`: the next address, or the client's response is cut).
    func resumedUpstreamFailed(_ u: UpstreamConnection, event: StreamEvent, connecting: Bool) -> Bool {
        switch event {
        case .readTimeout, .writeTimeout:
            cutMidBody(.timeout, cause: "upstream \(u.address) timed out (resumed request)")
        case .eof, .connected:
            cutMidBody(.closed, cause: "upstream \(u.address) closed the connection before answering the resumed request")
        case .error(let why) where !connecting:
            cutMidBody(.closed, cause: "upstream \(u.address) failed before answering the resumed request: \(why)")
        case .error, .tlsFailed:
            return false
        }
        return true
    }

    private func countResume(_ result: String) {
        worker.context.metrics.resume(route: route.name, result: result)
    }
}
