import Foundation
import Glibc

/// The state and threads behind a `TestOrigin`: an accept thread, one thread per connection, a waker
/// that interrupts them all on `stop()`, and the recorded requests. All state is guarded by `condition`.
final class OriginServer: @unchecked Sendable {
    let behavior: TestOrigin.Behavior
    let port: UInt16
    private let listener: Int32
    let waker: Waker

    private let condition = NSCondition()
    private var state = State.created
    private var accepted = 0
    private var open = 0
    private var recorded: [TestRequest] = []
    private var peerCloses = 0
    private var errors: [String] = []
    private var liveThreads = 0

    private enum State {
        case created      // → running
        case running      // → stopped
        case stopped      // final
    }

    init(behavior: TestOrigin.Behavior, port: UInt16 = 0) throws {
        self.behavior = behavior
        waker = try Waker()
        do {
            (listener, self.port) = try Socket.listenOnLoopback(port: port)
        } catch {
            waker.close()
            throw error
        }
    }

    func start() {
        condition.withLock { state = .running }
        spawn { self.acceptLoop() }
    }

    // MARK: Observations

    var acceptedConnections: Int { condition.withLock { accepted } }
    var openConnections: Int { condition.withLock { open } }
    var requests: [TestRequest] { condition.withLock { recorded } }
    var protocolErrors: [String] { condition.withLock { errors } }
    var connectionsClosedByPeer: Int { condition.withLock { peerCloses } }

    func waitForPeerCloses(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { peerCloses >= n }
    }

    /// The peer (Airlock) ended a connection: end of stream or a reset while the origin waited for a
    /// request, or a failed write of its response. Not counted when `stop()` ended it.
    private func notePeerClosed() {
        condition.withLock {
            guard state != .stopped else { return }
            peerCloses += 1
            condition.broadcast()
        }
    }

    func waitForRequests(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { recorded.count >= n }
    }

    func waitForConnections(_ n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { accepted >= n }
    }

    func waitForOpenConnections(atMost n: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { open <= n }
    }

    private func waitUntil(timeout: Double, _ done: () -> Bool) -> Bool {
        let limit = Date(timeIntervalSinceNow: max(0, timeout))
        condition.lock()
        defer { condition.unlock() }
        while !done() {
            if !condition.wait(until: limit) { return done() }
        }
        return true
    }

    func record(_ request: TestRequest) {
        condition.withLock {
            recorded.append(request)
            condition.broadcast()
        }
    }

    func recordError(_ message: String) {
        condition.withLock { errors.append(message) }
    }

    // MARK: Lifecycle

    func stop() {
        let previous: State = condition.withLock {
            defer { state = .stopped }
            return state
        }
        switch previous {
        case .stopped: return
        case .created: close(listener)  // no accept thread owns it yet
        case .running: break            // the accept thread closes it on its way out
        }
        waker.wake()
        let limit = Date(timeIntervalSinceNow: 10)
        let allEnded: Bool = condition.withLock {
            while liveThreads > 0 {
                if !condition.wait(until: limit) { break }
            }
            return liveThreads == 0
        }
        // A thread still running after 10 s (a handler that never returns) may still poll the waker;
        // leaking two descriptors is better than closing one it might reuse.
        if allEnded { waker.close() }
    }

    /// Starts a thread counted in `liveThreads`, unless stopped. Returns false if not started.
    @discardableResult
    private func spawn(_ body: @escaping @Sendable () -> Void) -> Bool {
        let started: Bool = condition.withLock {
            guard state == .running else { return false }
            liveThreads += 1
            return true
        }
        guard started else { return false }
        let thread = Thread {
            body()
            self.condition.withLock {
                self.liveThreads -= 1
                self.condition.broadcast()
            }
        }
        thread.name = "TestOrigin:\(port)"
        thread.start()
        return true
    }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let fd: Int32
            do {
                guard let accepted = try Socket.accept(listener, waker: waker) else { return }
                fd = accepted
            } catch {
                recordError("accept failed: \(error)")
                return
            }
            let index: Int = condition.withLock {
                defer { accepted += 1; open += 1; condition.broadcast() }
                return accepted
            }
            let served = spawn {
                self.serve(fd: fd, connectionIndex: index)
                self.connectionEnded()
            }
            if !served {
                connectionEnded()
                close(fd)
                return
            }
        }
    }

    /// Every serve path closes its descriptor before returning.
    private func connectionEnded() {
        condition.withLock {
            open -= 1
            condition.broadcast()
        }
    }

    // MARK: One connection

    private func serve(fd: Int32, connectionIndex: Int) {
        switch behavior {
        case .closeImmediately:
            close(fd)
        case .silent:
            serveSilently(fd: fd, connectionIndex: connectionIndex)
        case .raw(let handler):
            serveRaw(fd: fd, connectionIndex: connectionIndex, handler: handler)
        case .rawThenStall(let handler):
            serveRaw(fd: fd, connectionIndex: connectionIndex, stall: true, handler: handler)
        case .respond(let handler):
            serveResponses(fd: fd, connectionIndex: connectionIndex, handler: handler)
        case .answerOnceThenDrop(let handler):
            serveResponses(fd: fd, connectionIndex: connectionIndex, answering: 1, handler: handler)
        }
    }

    /// `answering`: how many requests get an answer before the connection is dropped at the next.
    private func serveResponses(fd: Int32, connectionIndex: Int, answering: Int = .max,
                                handler: @Sendable (TestRequest) -> TestResponse) {
        let reader = HTTPReader(fd: fd, waker: waker)
        var answered = 0
        while true {
            let request: TestRequest
            do {
                guard let next = try readRequest(reader, connectionIndex: connectionIndex, answerExpect: true) else {
                    notePeerClosed()
                    close(fd)
                    return
                }
                request = next
            } catch let error as AirlockTestingError {
                finishAfterReadError(error, fd: fd, reader: reader, connectionIndex: connectionIndex, answer400: true)
                return
            } catch {
                close(fd)
                return
            }
            record(request)
            if answered == answering {
                close(fd)
                return
            }
            answered += 1
            let response = handler(request)
            let keepAlive = !response.close && Self.wantsKeepAlive(request)
            do {
                try ResponseWriter(fd: fd, waker: waker).write(response, method: request.method, keepAlive: keepAlive)
            } catch {
                if (error as? AirlockTestingError)?.kind != .stopped {
                    recordError("connection \(connectionIndex): writing response failed: \(error)")
                    notePeerClosed()
                }
                close(fd)
                return
            }
            if !keepAlive {
                Socket.lingeringClose(fd, waker: waker)
                return
            }
        }
    }

    /// `stall`: after the bytes, keep the connection open (reading and dropping) until the peer closes.
    private func serveRaw(fd: Int32, connectionIndex: Int, stall: Bool = false,
                          handler: @Sendable (TestRequest) -> [UInt8]) {
        let reader = HTTPReader(fd: fd, waker: waker)
        let request: TestRequest
        do {
            guard let next = try readRequest(reader, connectionIndex: connectionIndex, answerExpect: false) else {
                close(fd)
                return
            }
            request = next
        } catch let error as AirlockTestingError {
            finishAfterReadError(error, fd: fd, reader: reader, connectionIndex: connectionIndex, answer400: false)
            return
        } catch {
            close(fd)
            return
        }
        record(request)
        let bytes = handler(request)
        do {
            try Socket.sendAll(fd, bytes, waker: waker, deadline: nil)
        } catch {
            if (error as? AirlockTestingError)?.kind != .stopped {
                recordError("connection \(connectionIndex): writing raw bytes failed: \(error)")
            }
        }
        if stall {
            while (try? reader.fill()) == true { _ = reader.take(upTo: .max) }
            notePeerClosed()
            close(fd)
            return
        }
        Socket.lingeringClose(fd, waker: waker)
    }

    private func serveSilently(fd: Int32, connectionIndex: Int) {
        let reader = HTTPReader(fd: fd, waker: waker)
        defer { close(fd) }
        do {
            while let request = try readRequest(reader, connectionIndex: connectionIndex, answerExpect: false) {
                record(request)
            }
            notePeerClosed()
        } catch {
            // Not HTTP (or stopped): keep reading and dropping bytes until the peer closes or stop().
            while (try? reader.fill()) == true { _ = reader.take(upTo: .max) }
        }
    }

    private func finishAfterReadError(_ error: AirlockTestingError, fd: Int32, reader: HTTPReader,
                                      connectionIndex: Int, answer400: Bool) {
        switch error.kind {
        case .stopped:
            close(fd)
        case .malformed:
            recordError("connection \(connectionIndex): \(error.message)")
            if answer400 {
                let answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                try? Socket.sendAll(fd, Array(answer.utf8), waker: waker, deadline: Deadline(seconds: 5))
            }
            Socket.lingeringClose(fd, waker: waker)
        default:
            recordError("connection \(connectionIndex): \(error.message)")
            close(fd)
        }
    }

    // MARK: Reading a request

    /// Reads one whole request. Returns nil if the peer closed cleanly between requests.
    private func readRequest(_ reader: HTTPReader, connectionIndex: Int, answerExpect: Bool) throws -> TestRequest? {
        guard let rawHead = try reader.readHead() else { return nil }
        let head = try HTTPHead.parse(rawHead)
        let (method, target, version) = try head.requestLine()
        var request = TestRequest(method: method, target: target, version: version, headers: head.headers,
                                  connectionIndex: connectionIndex,
                                  rawHead: String(decoding: rawHead, as: UTF8.self))
        request.rawHeadBytes = rawHead
        let length: Int?
        if head.hasTransferEncoding {
            guard head.isChunked else {
                throw AirlockTestingError(.malformed, "request Transfer-Encoding without final chunked: \(head.values("Transfer-Encoding"))")
            }
            length = nil
            request.wasChunked = true
        } else {
            length = try head.contentLength()
        }
        let hasBody = request.wasChunked || (length ?? 0) > 0
        if answerExpect, hasBody, head.tokens("Expect").contains("100-continue") {
            try Socket.sendAll(reader.fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), waker: waker, deadline: nil)
        }
        if request.wasChunked {
            (request.body, request.trailers) = try reader.readChunked()
        } else if let length, length > 0 {
            request.body = try reader.readExactly(length)
        }
        return request
    }

    static func wantsKeepAlive(_ request: TestRequest) -> Bool {
        let tokens = HTTPHead(startLine: "", headers: request.headers, raw: []).tokens("Connection")
        if tokens.contains("close") { return false }
        if request.version == "HTTP/1.0" { return tokens.contains("keep-alive") }
        return true
    }
}
