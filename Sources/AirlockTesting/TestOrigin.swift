/// A real HTTP/1.1 origin on 127.0.0.1:<ephemeral>, one thread per connection.
/// The public face of `OriginServer`; its threads hold the server, never this object, so dropping the last
/// reference to a `TestOrigin` stops it.
public final class TestOrigin: Sendable, RecordsRequests {
    public enum Behavior: Sendable {
        /// Keep-alive server: parses requests (Content-Length or chunked bodies) and answers each in order.
        /// HEAD, 1xx, 204 and 304 answers carry no body. `Expect: 100-continue` is answered with 100 first.
        case respond(@Sendable (TestRequest) -> TestResponse)
        /// Parses one request, then writes exactly these bytes and closes (for malformed responses).
        case raw(@Sendable (TestRequest) -> [UInt8])
        /// Parses one request, writes these bytes, then sends nothing more and keeps the
        /// connection open until the peer closes or `stop()` (a response that stalls).
        case rawThenStall(@Sendable (TestRequest) -> [UInt8])
        /// Accepts and reads (recording whole requests), never answers, until the peer closes or `stop()`.
        case silent
        /// Accepts, then closes at once.
        case closeImmediately
        /// Answers the first request of each connection (keep-alive), then reads the next one and
        /// closes without answering it: a kept-alive connection the server dropped just as the
        /// client reused it (both requests are recorded).
        case answerOnceThenDrop(@Sendable (TestRequest) -> TestResponse)
    }

    private let server: OriginServer

    /// Binds 127.0.0.1:0 (or `port`: an origin restarted where a stopped one listened),
    /// listens and starts the accept thread.
    public init(_ behavior: Behavior, port: UInt16 = 0) throws {
        server = try OriginServer(behavior: behavior, port: port)
        server.start()
    }

    deinit {
        server.stop()
    }

    public var port: UInt16 { server.port }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String = "/") -> String {
        "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? path : "/" + path)"
    }

    /// Connections accepted so far.
    public var acceptedConnections: Int { server.acceptedConnections }

    /// Connections accepted and not yet closed (by either side).
    public var openConnections: Int { server.openConnections }

    /// Waits until at most `n` connections are open. False if `timeout` seconds pass first.
    public func waitForOpenConnections(atMost n: Int, timeout: Double) -> Bool {
        server.waitForOpenConnections(atMost: n, timeout: timeout)
    }

    /// Every request received so far, in arrival order.
    public var requests: [TestRequest] { server.requests }

    /// How many requests were received so far.
    public var requestCount: Int { requests.count }

    /// Why a connection was dropped without a request being recorded (unparseable head, bad framing, ...).
    public var protocolErrors: [String] { server.protocolErrors }

    /// Connections the peer ended (end of stream or reset while this origin waited for the next request, or
    /// a response write that failed), not counting those `stop()` ended.
    public var connectionsClosedByPeer: Int { server.connectionsClosedByPeer }

    /// Waits until the peer has ended at least `n` connections. False if `timeout` seconds pass first.
    public func waitForPeerCloses(_ n: Int, timeout: Double) -> Bool {
        server.waitForPeerCloses(n, timeout: timeout)
    }

    /// Waits until at least `n` requests have arrived. False if `timeout` seconds pass first.
    public func waitForRequests(_ n: Int, timeout: Double) -> Bool {
        server.waitForRequests(n, timeout: timeout)
    }

    /// Waits until at least `n` connections have been accepted. False if `timeout` seconds pass first.
    public func waitForConnections(_ n: Int, timeout: Double) -> Bool {
        server.waitForConnections(n, timeout: timeout)
    }

    /// Closes the listener and every connection and waits (up to 10 s) for all threads to end. Idempotent.
    public func stop() {
        server.stop()
    }
}
