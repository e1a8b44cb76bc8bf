import AirlockTesting
import Foundation
import Synchronization
import XCTest

/// Zero-copy relay (`limits.splice`, issue #23 item 1): response bodies (Content-Length and
/// chunked) and CONNECT tunnels move socket to socket with splice(2) through the worker's pipe
/// pool. Real sockets and a real gateway: 50 MiB bodies keep their framing and SHA-256, the
/// access record's byte counts stay exact, `airlock_spliced_bytes_total` shows the path was
/// taken (and is 0 when splicing is off or a phase needs the bytes), and a slow reader keeps
/// the upstream from being read past a bound.
final class SpliceTests: GatewayTestCase {
    /// Bytes the origin has handed to its socket so far.
    private final class Written: Sendable {
        let bytes = Atomic<Int>(0)
    }

    /// An origin answering each request on a connection: `/cl/<n>` n pattern bytes with a
    /// Content-Length, `/chunked/<n>` the same in chunks of uneven sizes (a trailer-less last
    /// chunk), `/json/<n>` a JSON string of n bytes with `Cache-Control: max-age=60`. The head
    /// leaves before the body, so most of the body arrives after it.
    private func origin(written: Written = Written()) throws -> TCPTestServer {
        let s = try TCPTestServer { c in
            while true {
                guard let head = try? c.read(through: "\r\n\r\n", timeout: 30), !head.isEmpty else { return }
                let line = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
                let target = line.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                let parts = target.split(separator: "/")
                let kind = parts.first.map(String.init) ?? ""
                let n = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
                let body = kind == "json" ? Array("\"".utf8) + [UInt8](repeating: 0x61, count: n - 2) + Array("\"".utf8)
                    : patternBytes(count: n, offset: 3)
                func send(_ bytes: [UInt8]) -> Bool {
                    guard (try? c.write(bytes, timeout: 60)) != nil else { return false }
                    written.bytes.add(bytes.count, ordering: .relaxed)
                    return true
                }
                switch kind {
                case "close":   // close-delimited: no length, the body ends with the connection
                    guard send(Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8)) else { return }
                    var at = 0
                    while at < body.count {
                        let end = min(at + 1 << 20, body.count)
                        guard send(Array(body[at..<end])) else { return }
                        at = end
                    }
                    return
                case "chunked":
                    guard send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)) else { return }
                    let sizes = [1, 4093, 1 << 20, 300_001, 65536, 17, 2 << 20]
                    var at = 0
                    var i = 0
                    while at < body.count {
                        let size = min(sizes[i % sizes.count], body.count - at)
                        i += 1
                        guard send(Array((String(size, radix: 16) + "\r\n").utf8) + body[at..<(at + size)] + Array("\r\n".utf8))
                        else { return }
                        at += size
                    }
                    guard send(Array("0\r\n\r\n".utf8)) else { return }
                default:
                    let type = kind == "json" ? "application/json\r\nCache-Control: max-age=60" : "application/octet-stream"
                    guard send(Array("HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nContent-Length: \(n)\r\n\r\n".utf8))
                    else { return }
                    var at = 0
                    while at < body.count {
                        let end = min(at + 1 << 20, body.count)
                        guard send(Array(body[at..<end])) else { return }
                        at = end
                    }
                }
            }
        }
        servers.append(s)
        return s
    }

    private func gateway(upstream: UInt16, route: String = "", limits: [String: String] = [:]) throws -> (AirlockProcess, UInt16) {
        let a = try Fixture.start(Fixture.tunnelConfig(connectPort: upstream, limits: limits, moreRoutes: """
            \(route)
              - name: api
                match: { host: "*" }
                upstream: http://127.0.0.1:\(upstream)
            """))
        airlocks.append(a)
        return (a, try Fixture.adminPort(a))
    }

    private func spliced(_ admin: UInt16) throws -> Double { try Fixture.metric("airlock_spliced_bytes_total", admin: admin) }

    /// Waits (up to 30 s) until the origin's writes stop growing for half a second; returns
    /// what it wrote by then.
    private func waitForStall(_ written: Written) -> Int {
        var last = -1
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let now = written.bytes.load(ordering: .relaxed)
            if now == last { break }
            last = now
            usleep(500_000)
        }
        return last
    }

    // MARK: bodies

    func testContentLengthBodiesAreSplicedWithEqualChecksumsAndExactCounts() throws {
        let o = try origin()
        let (a, admin) = try gateway(upstream: o.port)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        let size = 50 * 1024 * 1024
        // Three responses on one connection: the second's head must follow the first's last
        // spliced byte, and the small third goes the copying way behind a pipe.
        for n in [size, 3 * 1024 * 1024 + 5, 100] {
            try c.send("GET /cl/\(n) HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = try c.readResponse(timeout: 120)
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.header("Content-Length"), "\(n)")
            XCTAssertEqual(r.body.count, n)
            XCTAssertEqual(try sha256Hex(r.body), try sha256Hex(patternBytes(count: n, offset: 3)))
        }
        let records = Fixture.accessRecords(a, count: 3)
        XCTAssertEqual(records.compactMap { $0["bytes_out"] as? Int }, [size, 3 * 1024 * 1024 + 5, 100])
        XCTAssertGreaterThan(try spliced(admin), Double(size - 4 * 1024 * 1024), "the 50 MiB body was spliced")
    }

    func testChunkedBodiesAreSplicedChunkByChunk() throws {
        let written = Written()
        let o = try origin(written: written)
        let (a, admin) = try gateway(upstream: o.port)
        let c = try RawClient(port: a.port, receiveBufferSize: 32 * 1024)
        defer { c.close() }
        let size = 50 * 1024 * 1024
        for n in [size, 1_000_003] {
            try c.send("GET /chunked/\(n) HTTP/1.1\r\nHost: x\r\n\r\n")
            // Not read until the origin stalls: the pipe then holds a chunk's bytes while its
            // CRLF and the next size lines are queued, and those must wait for them.
            _ = waitForStall(written)
            let r = try c.readResponse(timeout: 120)
            XCTAssertEqual(r.status, 200)
            XCTAssertTrue(r.wasChunked)
            XCTAssertEqual(r.body.count, n)
            XCTAssertEqual(try sha256Hex(r.body), try sha256Hex(patternBytes(count: n, offset: 3)))
        }
        let records = Fixture.accessRecords(a, count: 2)
        XCTAssertEqual(records.compactMap { $0["bytes_out"] as? Int }, [size, 1_000_003])
        XCTAssertGreaterThan(try spliced(admin), Double(size / 2), "the chunks' payloads were spliced")
    }

    /// HTTP/1.0 clients: a chunked body goes out close-delimited (payloads spliced, chunk lines
    /// dropped), and a close-delimited one is spliced until the upstream's EOF.
    func testBodiesForHTTP10ClientsAreSplicedWithoutFraming() throws {
        let o = try origin()
        let (a, admin) = try gateway(upstream: o.port)
        var total = 0
        for (kind, n) in [("chunked", 20_000_017), ("close", 20 << 20)] {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send("GET /\(kind)/\(n) HTTP/1.0\r\nHost: x\r\n\r\n")
            let r = try c.readResponse(timeout: 60)
            XCTAssertEqual(r.status, 200, kind)
            XCTAssertFalse(r.wasChunked, kind)
            XCTAssertNil(r.header("Content-Length"), kind)
            XCTAssertEqual(r.body.count, n, kind)
            XCTAssertTrue(r.body == patternBytes(count: n, offset: 3), "\(kind): byte-exact")
            total += n
        }
        let records = Fixture.accessRecords(a, count: 2)
        XCTAssertEqual(records.compactMap { $0["bytes_out"] as? Int }, [20_000_017, 20 << 20])
        XCTAssertGreaterThan(try spliced(admin), Double(total / 2))
    }

    func testNothingIsSplicedWhenSpliceIsOff() throws {
        let o = try origin()
        let (a, admin) = try gateway(upstream: o.port, limits: ["splice": "false"])
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /cl/\(8 << 20) HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = try c.readResponse(timeout: 60)
        XCTAssertEqual(r.body.count, 8 << 20)
        XCTAssertEqual(try spliced(admin), 0)
    }

    /// A body validator and the response cache's copy need the bytes: those bodies are copied.
    func testBodiesAPhaseNeedsAreNotSpliced() throws {
        let o = try origin()
        let (a, admin) = try gateway(upstream: o.port, route: """
              - name: validated
                match: { host: validated }
                upstream: http://127.0.0.1:\(o.port)
                response: { serializer: json, max_body_bytes: 16MiB }
              - name: cached
                match: { host: cached }
                upstream: http://127.0.0.1:\(o.port)
                cache: { memory: 64MiB, max_object: 16MiB }
            """)
        for host in ["validated", "cached"] {
            let c = try RawClient(port: a.port)
            defer { c.close() }
            try c.send("GET /json/\(8 << 20) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            let r = try c.readResponse(timeout: 60)
            XCTAssertEqual(r.status, 200, host)
            XCTAssertEqual(r.body.count, 8 << 20, host)
        }
        XCTAssertEqual(try spliced(admin), 0)
        // The same body on the plain route is spliced: the origin is not what kept it copied.
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /json/\(8 << 20) HTTP/1.1\r\nHost: plain\r\n\r\n")
        XCTAssertEqual(try c.readResponse(timeout: 60).body.count, 8 << 20)
        XCTAssertGreaterThan(try spliced(admin), 0)
    }

    /// A TLS upstream: the bytes on its socket are not the body's, so the body is copied (and
    /// decrypted) whole, byte-exact.
    func testBodiesFromATLSUpstreamAreNotSpliced() throws {
        let pki = try TLSTestPKI.generate()
        defer { pki.remove() }
        let o = try TLSTestOrigin(pki: pki)
        defer { o.stop() }
        let plain = try origin()
        let (a, admin) = try gateway(upstream: plain.port, route: """
              - name: tls
                match: { host: tls }
                upstream: https://localhost:\(o.port)
                security:
                  ca: "\(pki.path("root.pem"))"
            """)
        let c = try RawClient(port: a.port)
        defer { c.close() }
        try c.send("GET /random/\(8 << 20) HTTP/1.1\r\nHost: tls\r\n\r\n")
        let r = try c.readResponse(timeout: 60)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.body.count, 8 << 20)
        XCTAssertEqual(try sha256Hex(r.body), o.sentBodies.last?.sha256)
        XCTAssertEqual(try spliced(admin), 0)
    }

    /// Issue #23 item 5: 64 connections each fetching 1 MiB bodies at once (the bench's 1 MiB
    /// row): little of each body is copied before its splice starts, so the gateway's peak RSS
    /// grows by a few MiB, not by the bodies' first reads (about 256 KiB a connection).
    func testSixtyFourParallelOneMiBDownloadsKeepPeakMemoryLow() throws {
        let o = try origin()
        // Timeouts far above the fixture's 2-3 s: 64 downloads at once from an origin in this test
        // process may wait on a loaded CI machine, and what is measured here is memory, not time.
        let (a, admin) = try gateway(upstream: o.port, limits: ["header_timeout": "30s", "upstream_timeout": "30s",
                                                                "connect_timeout": "10s"])
        func peakKiB() throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(a.pid)/status", encoding: .utf8)
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
            return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        }
        // Warm up: the first exchange's lazily made buffers and the loop's tables.
        let warm = try RawClient(port: a.port)
        try warm.send("GET /cl/\(1 << 20) HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(try warm.readResponse(timeout: 30).body.count, 1 << 20)
        warm.close()
        let before = try peakKiB()
        let failures = Mutex(0)
        let done = DispatchGroup()
        for _ in 0..<64 {
            done.enter()
            Thread {
                defer { done.leave() }
                do {
                    let c = try RawClient(port: a.port)
                    defer { c.close() }
                    for _ in 0..<4 {
                        try c.send("GET /cl/\(1 << 20) HTTP/1.1\r\nHost: x\r\n\r\n")
                        if try c.readResponse(timeout: 60).body.count != 1 << 20 { failures.withLock { $0 += 1 } }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(failures.withLock { $0 }, 0)
        let grew = try peakKiB() - before
        XCTAssertLessThan(grew, 4 * 1024, "peak RSS grew by \(grew) KiB for 64 parallel 1 MiB downloads")
        XCTAssertGreaterThan(try spliced(admin), Double(200 << 20))
    }

    /// An origin that reads one request body per request (Content-Length or chunked), keeps
    /// it, and answers `200` with the byte count.
    private final class Bodies: Sendable {
        let list = Mutex<[[UInt8]]>([])
    }

    private func uploadOrigin(_ bodies: Bodies) throws -> TCPTestServer {
        let s = try TCPTestServer { c in
            while true {
                guard let head = try? c.read(through: "\r\n\r\n", timeout: 30), !head.isEmpty else { return }
                let text = String(decoding: head, as: UTF8.self).lowercased()
                var body: [UInt8] = []
                if text.contains("transfer-encoding: chunked") {
                    while true {
                        guard let line = try? c.read(through: "\r\n", timeout: 30), line.count >= 2,
                              let size = Int(String(decoding: line.dropLast(2), as: UTF8.self), radix: 16) else { return }
                        if size == 0 {
                            _ = try? c.read(through: "\r\n", timeout: 30)
                            break
                        }
                        guard let data = try? c.read(exactly: size + 2, timeout: 30), data.count == size + 2 else { return }
                        body += data.dropLast(2)
                    }
                } else if let range = text.range(of: "content-length: ") {
                    let n = Int(text[range.upperBound...].prefix { $0.isNumber }) ?? 0
                    guard let data = try? c.read(exactly: n, timeout: 60), data.count == n else { return }
                    body = data
                }
                bodies.list.withLock { $0.append(body) }
                guard (try? c.write("HTTP/1.1 200 OK\r\nContent-Length: \(String(body.count).count)\r\n\r\n\(body.count)")) != nil
                else { return }
            }
        }
        servers.append(s)
        return s
    }

    /// Request bodies relayed as they are splice too: 50 MiB with a Content-Length, then a
    /// chunked one, on one connection, each arriving whole with its framing, bytes_in exact.
    func testRequestBodiesAreSplicedUp() throws {
        let bodies = Bodies()
        let o = try uploadOrigin(bodies)
        let (a, admin) = try gateway(upstream: o.port)
        let c = try TCPTestConnection.connect(port: a.port)
        defer { c.close() }
        let size = 50 * 1024 * 1024
        let sent = patternBytes(count: size, offset: 13)
        try c.write("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n\r\n")
        try c.write(sent, timeout: 120)
        XCTAssertEqual(String(decoding: try c.read(through: "\r\n\r\n", timeout: 60), as: UTF8.self).prefix(15), "HTTP/1.1 200 OK")
        XCTAssertEqual(String(decoding: try c.read(exactly: 8, timeout: 10), as: UTF8.self), "\(size)")
        // Chunked: uneven chunks, the framing passed on as chunked.
        let chunked = patternBytes(count: 3_000_017, offset: 1)
        try c.write("POST /up2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        var at = 0
        for size in [1, 70_000, 1 << 20, 5, 2 << 20] where at < chunked.count {
            let n = min(size, chunked.count - at)
            try c.write(Array((String(n, radix: 16) + "\r\n").utf8) + chunked[at..<(at + n)] + Array("\r\n".utf8))
            at += n
        }
        try c.write("0\r\n\r\n")
        XCTAssertEqual(String(decoding: try c.read(through: "\r\n\r\n", timeout: 60), as: UTF8.self).prefix(15), "HTTP/1.1 200 OK")
        XCTAssertEqual(String(decoding: try c.read(exactly: 7, timeout: 10), as: UTF8.self), "\(at)")
        let got = bodies.list.withLock { $0 }
        XCTAssertEqual(got.count, 2)
        XCTAssertEqual(got.first?.count, size)
        XCTAssertTrue(got.first.map { $0 == sent } ?? false, "the 50 MiB body arrived byte-exact")
        XCTAssertTrue(got.last.map { $0[...] == chunked[..<at] } ?? false, "the chunked body arrived byte-exact")
        let records = Fixture.accessRecords(a, count: 2)
        XCTAssertEqual(records.compactMap { $0["bytes_in"] as? Int }, [size, at])
        XCTAssertGreaterThan(try spliced(admin), Double(size / 2), "the upload was spliced")
    }

    /// A client that stops reading: the upstream is not read past a bound (the pipe, socket
    /// buffers), and the gateway's memory stays flat; the rest arrives once it reads again.
    func testSlowReaderBoundsWhatTheUpstreamSends() throws {
        let written = Written()
        let o = try origin(written: written)
        let (a, admin) = try gateway(upstream: o.port)
        let before = try a.readResidentMemoryKiB()
        let size = 256 * 1024 * 1024
        let c = try TCPTestConnection.connect(port: a.port, receiveBuffer: 64 * 1024)
        defer { c.close() }
        try c.write("GET /cl/\(size) HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertTrue(String(decoding: try c.read(through: "\r\n\r\n", timeout: 10), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        var got = 0
        while got < 4 * 1024 * 1024 { got += try c.read(upTo: 65536, timeout: 10).count }
        // The client reads nothing now: wait until the origin's writes stall.
        let last = waitForStall(written)
        XCTAssertLessThan(last, 48 * 1024 * 1024, "the origin wrote \(last) bytes to a stalled client")
        let after = try a.readResidentMemoryKiB()
        XCTAssertLessThan(after - before, 8 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
        while got < size {
            let chunk = try c.read(upTo: 1 << 20, timeout: 30)
            if chunk.isEmpty { break }
            got += chunk.count
        }
        XCTAssertEqual(got, size)
        XCTAssertGreaterThan(try spliced(admin), Double(size / 2))
    }
}
