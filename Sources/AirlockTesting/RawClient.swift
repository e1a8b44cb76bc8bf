import Foundation
import Glibc
import Synchronization

/// A raw TCP client for hostile, pipelined and slow-reader tests. Bytes the peer sent beyond one response
/// stay buffered for the next read. Calls are serialized; every read and write is bounded by a timeout.
public final class RawClient: @unchecked Sendable {
    /// The socket (-1 once closed). Its lock also guards `reader`, and is held for the length of one call.
    private let fd: Mutex<Int32>
    private let reader: HTTPReader

    /// Connects to `host:port`. `receiveBufferSize` sets SO_RCVBUF before connecting, where it also limits
    /// the advertised TCP window (set it there for slow-reader tests).
    public init(port: UInt16, host: String = "127.0.0.1", receiveBufferSize: Int? = nil, connectTimeout: Double = 10) throws {
        let fd = try Socket.connect(host: host, port: port, timeout: connectTimeout, receiveBuffer: receiveBufferSize)
        self.fd = Mutex(fd)
        reader = HTTPReader(fd: fd, waker: nil)
    }

    deinit {
        fd.withLock { fd in if fd >= 0 { Glibc.close(fd) } }
    }

    public var localPort: UInt16 { fd.withLock { fd in fd >= 0 ? Socket.localPort(fd) : 0 } }

    // MARK: Writing

    public func send(_ bytes: [UInt8], timeout: Double = 10) throws {
        try withOpenSocket { fd in
            try Socket.sendAll(fd, bytes, waker: nil, deadline: Deadline(seconds: timeout))
        }
    }

    public func send(_ text: String, timeout: Double = 10) throws {
        try send(Array(text.utf8), timeout: timeout)
    }

    /// Half-closes: the peer reads end of stream, this side can still read.
    public func shutdownWrite() {
        fd.withLock { fd in
            if fd >= 0 { _ = shutdown(fd, Int32(SHUT_WR)) }
        }
    }

    // MARK: Reading

    /// Reads one full HTTP/1.1 response: status line, fields, and a body framed by Content-Length, chunked,
    /// or (with neither) read until close. No body for HEAD, 1xx, 204 and 304. A 1xx interim response is
    /// returned on its own; call again for the final one. Throws `.timeout` if it is not complete in time,
    /// `.closed` if the peer closes first.
    public func readResponse(timeout: Double = 10, requestMethod: String = "GET") throws -> RawResponse {
        try withOpenSocket { _ in
            reader.deadline = Deadline(seconds: timeout)
            reader.beginCapture()
            do {
                var response = try readResponseLocked(requestMethod: requestMethod)
                response.raw = reader.endCapture()
                return response
            } catch var error as AirlockTestingError {
                let partial = reader.endCapture()
                if !partial.isEmpty {
                    error.message += "; received so far: \(String(decoding: partial.prefix(500), as: UTF8.self).debugDescription)"
                }
                throw error
            }
        }
    }

    private func readResponseLocked(requestMethod: String) throws -> RawResponse {
        guard let rawHead = try reader.readHead() else {
            throw AirlockTestingError(.closed, "peer closed before sending a response")
        }
        let head = try HTTPHead.parse(rawHead)
        let (version, status, reason) = try head.statusLine()
        var response = RawResponse(version: version, status: status, reason: reason,
                                   headers: head.headers.map { ($0.name, $0.value) },
                                   body: [], wasChunked: false, trailers: [], raw: [])
        let bodiless = requestMethod.uppercased() == "HEAD" || (100..<200).contains(status)
            || (requestMethod.uppercased() == "CONNECT" && (200..<300).contains(status))   // a tunnel follows
            || status == 204 || status == 304
        if !bodiless {
            if head.hasTransferEncoding {
                if head.isChunked {
                    let (body, trailers) = try reader.readChunked()
                    response.body = body
                    response.trailers = trailers.map { ($0.name, $0.value) }
                    response.wasChunked = true
                } else {
                    response.body = try reader.readToEnd()
                }
            } else if let length = try head.contentLength() {
                response.body = try reader.readExactly(length)
            } else {
                response.body = try reader.readToEnd()
            }
        }
        return response
    }

    /// Everything until the peer closes (including bytes already buffered). Throws `.timeout` if it does
    /// not close in time. A reset counts as a close; see `wasReset`.
    public func readUntilClose(timeout: Double = 10) throws -> [UInt8] {
        try withOpenSocket { _ in
            reader.deadline = Deadline(seconds: timeout)
            return try reader.readToEnd()
        }
    }

    /// At most `n` bytes: what is buffered, else whatever the next read brings. Empty at end of stream.
    /// Takes no more than `n` bytes from the kernel, so a slow reader keeps the TCP window small.
    /// Throws `.timeout` if nothing arrives within `timeout`.
    public func read(upTo n: Int, timeout: Double) throws -> [UInt8] {
        try withOpenSocket { _ in
            if reader.bufferedCount == 0 {
                reader.deadline = Deadline(seconds: timeout)
                guard try reader.fill(maximum: min(n, 65_536)) else { return [] }
            }
            return reader.take(upTo: n)
        }
    }

    /// True if the peer closes (or resets) within `timeout`. Bytes arriving meanwhile stay buffered.
    public func isClosedByPeer(timeout: Double) -> Bool {
        (try? withOpenSocket { _ in
            reader.deadline = Deadline(seconds: timeout)
            while try reader.fill() {}
            return true
        }) ?? false
    }

    /// The peer reset the connection (ECONNRESET) rather than closing it in order.
    public var wasReset: Bool { fd.withLock { _ in reader.sawReset } }

    /// SO_RCVBUF on the connected socket (the kernel doubles it and may clamp it).
    public func setReceiveBuffer(_ bytes: Int) {
        fd.withLock { fd in
            if fd >= 0 { Socket.setReceiveBuffer(fd, bytes: bytes) }
        }
    }

    /// Closes the socket. Idempotent; also on deinit.
    public func close() {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            Glibc.close(fd)
            fd = -1
        }
    }

    private func withOpenSocket<T>(_ body: (Int32) throws -> T) throws -> T {
        try fd.withLock { fd throws(any Error) -> T in
            guard fd >= 0 else { throw AirlockTestingError(.closed, "RawClient is closed") }
            return try body(fd)
        }
    }
}
