import AirlockSession
import AirlockWire
import XCTest

/// The task's pure parts with no sockets: state derivation, progress, metrics, the bounded
/// per-subscriber event queue.
final class TaskStateTests: XCTestCase {
    private func derive(_ m: ExchangeMachine, ready: Bool = true, suspended: Bool = false,
                        cancelled: Bool = false) -> TaskState {
        TaskState.derive(m, upstreamReady: ready, suspended: suspended, cancelled: cancelled)
    }

    func testAGetGoesConnectingWaitingReceivingCompleted() {
        var m = ExchangeMachine(method: .get, requestHasBody: false)
        XCTAssertEqual(derive(m, ready: false), .connecting)
        _ = m.upstreamReady(reused: false)
        XCTAssertEqual(derive(m), .waiting, "a request without a body is all sent with its head")
        _ = m.responseHeadReceived(status: 200, validates: false)
        XCTAssertEqual(derive(m), .receiving)
        XCTAssertEqual(derive(m, suspended: true), .suspended)
        XCTAssertEqual(m.responseComplete(), .finishExchange)
        XCTAssertEqual(derive(m), .completed)
        XCTAssertTrue(derive(m).isFinal)
    }

    func testAPostIsSendingUntilItsBodyIsUp() {
        var m = ExchangeMachine(method: .post, requestHasBody: true)
        XCTAssertEqual(derive(m, ready: false), .connecting)
        _ = m.upstreamReady(reused: true)
        XCTAssertEqual(derive(m), .sending)
        XCTAssertEqual(derive(m, suspended: true), .suspended, "an upstream that stops reading holds the upload")
        XCTAssertEqual(m.requestBodyComplete(), .none)
        XCTAssertEqual(derive(m), .waiting)
    }

    func testValidatingFailedAndCancelled() {
        var m = ExchangeMachine(method: .get, requestHasBody: false)
        _ = m.upstreamReady(reused: false)
        _ = m.responseHeadReceived(status: 200, validates: true)
        XCTAssertEqual(derive(m), .validating)
        XCTAssertEqual(derive(m, cancelled: true), .cancelled, "an admin cancel wins over any phase")
        XCTAssertEqual(m.answeredByGateway(requestKeepAlive: true, clientContinues: true, mustClose: false), .answer(keepAlive: true))
        XCTAssertEqual(derive(m), .failed, "a rejected or errored exchange is failed")

        var gone = ExchangeMachine(method: .get, requestHasBody: false)
        _ = gone.upstreamReady(reused: false)
        _ = gone.clientGone()
        XCTAssertEqual(derive(gone), .cancelled, "the client went away before any response")

        var cut = ExchangeMachine(method: .get, requestHasBody: false)
        _ = cut.upstreamReady(reused: false)
        _ = cut.responseHeadReceived(status: 200, validates: false)
        _ = cut.upstreamFailed(.closed)
        XCTAssertEqual(derive(cut), .failed, "an upstream that dies mid-body fails the task")
    }

    func testProgressFraction() {
        XCTAssertNil(TaskProgress(done: 10, expected: nil).fraction)
        XCTAssertEqual(TaskProgress(done: 0, expected: 0).fraction, 1)
        XCTAssertEqual(TaskProgress(done: 25, expected: 100).fraction, 0.25)
        XCTAssertEqual(TaskProgress(done: 200, expected: 100).fraction, 1, "never past complete")
    }

    func testMetricsPhasesOmitWhatDidNotHappen() {
        var m = TaskMetrics(fetchStart: 1_000_000)
        m.requestSent = 1_500_000
        m.firstResponseByte = 3_000_000
        m.responseEnd = 11_000_000
        m.reused = true
        XCTAssertEqual(m.phases.map(\.name), ["request_sent", "ttfb", "total"], "a pooled connection has no dns/connect/tls")
        XCTAssertEqual(m.ttfbMillis, 2)
        XCTAssertEqual(m.totalMillis, 10)
        m.dnsStart = 1_000_000; m.dnsEnd = 1_250_000
        m.connectStart = 1_250_000; m.connectEnd = 1_400_000
        m.secureStart = 1_300_000; m.secureEnd = 1_400_000
        XCTAssertEqual(m.phases.map(\.name), ["dns", "connect", "tls", "request_sent", "ttfb", "total"])
        XCTAssertEqual(m.dnsMillis, 0.25)
        XCTAssertEqual(m.connectMillis, 0.15)
        var backwards = TaskMetrics(fetchStart: 5_000_000)
        backwards.responseEnd = 4_000_000
        XCTAssertNil(backwards.totalMillis, "an end before its start is not a duration")
    }
}

final class EventQueueTests: XCTestCase {
    private func drain(_ q: inout EventQueue<Int>) -> [String] {
        var out: [String] = []
        for _ in 0..<1000 {
            guard let e = q.pop() else { return out }
            switch e {
            case .event(let v): out.append("\(v)")
            case .lost(let n): out.append("lost \(n)")
            }
        }
        XCTFail("the queue did not empty")
        return out
    }

    func testEventsComeOutInOrder() {
        var q = EventQueue<Int>(capacity: 4)
        for i in 1...3 { XCTAssertTrue(q.push(i)) }
        XCTAssertEqual(drain(&q), ["1", "2", "3"])
        XCTAssertTrue(q.isEmpty)
    }

    func testAFullQueueDropsCountsAndTellsWhereTheGapIs() {
        var q = EventQueue<Int>(capacity: 3)
        for i in 1...10 { q.push(i) }
        XCTAssertEqual(q.count, 3, "never past its capacity")
        XCTAssertEqual(q.totalLost, 7)
        XCTAssertEqual(q.pop().map { if case .event(1) = $0 { true } else { false } }, true)
        XCTAssertEqual(q.pop().map { if case .event(2) = $0 { true } else { false } }, true)
        // Room again: the notice goes in ahead of the next event.
        XCTAssertTrue(q.push(11))
        XCTAssertEqual(drain(&q), ["3", "lost 7", "11"])
        XCTAssertEqual(q.pendingLost, 0)
    }

    func testALossAtTheEndIsReportedOnceEverythingIsRead() {
        var q = EventQueue<Int>(capacity: 2)
        for i in 1...5 { q.push(i) }
        XCTAssertEqual(drain(&q), ["1", "2", "lost 3"])
        XCTAssertNil(q.pop())
        XCTAssertTrue(q.isEmpty)
    }

    func testStaysBoundedUnderLongChurn() {
        var q = EventQueue<Int>(capacity: 8)
        var seen = 0
        var lost = 0
        for i in 0..<10_000 {
            q.push(i)
            XCTAssertLessThanOrEqual(q.count, 8)
            if i % 3 == 0, let e = q.pop() {
                switch e {
                case .event: seen += 1
                case .lost(let n): lost += n
                }
            }
        }
        for e in drain(&q) { if e.hasPrefix("lost ") { lost += Int(e.dropFirst(5))! } else { seen += 1 } }
        XCTAssertEqual(seen + lost, 10_000, "every event is either delivered or counted as lost")
        XCTAssertEqual(q.totalLost, lost)
    }
}
