@testable import AirlockIO
import AirlockTesting
import XCTest

// Foundation (through XCTest) has its own Stream.
private typealias Stream = AirlockIO.Stream

/// A connecting `Stream` with TLS (its `TLSClientSession`) against a real TLS origin on
/// 127.0.0.1 (`TLSTestOrigin`, certificates generated for the test): the session tickets
/// the server issues reach the setup's owner as `TLSSessionTicket`s, a ticket resumes the
/// next connection even after the cache dropped it, and `tlsVerify` checks the chain.
final class TLSClientSessionTests: TLSOriginTestCase {
    private func context() throws -> TLSClientContext {
        try TLSClientContext(caFiles: [pki.path("root.pem")], pinnedAnchors: [])
    }

    /// Connects with TLS, sends one request with `Connection: close` and reads to the end.
    /// `connecting` runs once the connect has started, before the handshake. Returns the
    /// stream (closed) and what arrived.
    private func exchange(_ loop: EventLoop, _ ctx: TLSClientContext, session: () -> TLSSessionTicket? = { nil },
                          connecting: () -> Void = {},
                          onTicket: @escaping (TLSSessionTicket) -> Void) throws -> (Stream, StreamRecorder) {
        let s = try tlsStream(loop, context: ctx, session: session(), onNewSession: onTicket)
        let r = StreamRecorder()
        s.delegate = r
        connecting()
        run(loop) { !r.events.isEmpty }
        XCTAssertEqual(r.events, [.connected])
        s.write(Array("GET /t HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8))
        run(loop) { r.events.count > 1 }
        XCTAssertEqual(r.events, [.connected, .eof], "the origin ends with close_notify")
        XCTAssertTrue(String(decoding: r.received, as: UTF8.self).hasSuffix("hello over tls /t"),
                      String(decoding: r.received, as: UTF8.self))
        s.close()
        return (s, r)
    }

    func testTicketFromOneConnectionResumesTheNextAfterTheCacheDroppedIt() throws {
        let loop = EventLoop(name: "test")
        let ctx = try context()
        let cache = TLSSessionCache()
        let (first, _) = try exchange(loop, ctx) { cache.store($0, for: "k") }
        XCTAssertFalse(first.tlsSessionReused)
        XCTAssertEqual(cache.count, 1, "the server's ticket reached the setup's owner")
        var offeredAgain = 0
        // Once the connect has started, the cache drops the ticket: the connecting stream's
        // setup is then its only holder, and it must stay valid until the handshake took it.
        let (second, _) = try exchange(loop, ctx, session: { cache.session(for: "k") },
                                       connecting: { cache.remove("k") }) { _ in offeredAgain += 1 }
        XCTAssertEqual(cache.count, 0)
        XCTAssertTrue(second.tlsSessionReused, origin.logText)
        XCTAssertTrue(origin.waitForHandshakes(2, timeout: 5), origin.logText)
        XCTAssertEqual(origin.resumedHandshakes, 1, origin.logText)
        XCTAssertGreaterThan(offeredAgain, 0, "a resumed connection is offered the server's new tickets too")
    }

    func testVerifyChecksThePresentedChainAgainstTheHostname() throws {
        let loop = EventLoop(name: "test")
        let ctx = try context()
        let (s, _) = try exchange(loop, ctx) { _ in }
        let chain = try XCTUnwrap(s.tlsPeerChain)
        XCTAssertGreaterThanOrEqual(chain.count, 2, "leaf and intermediate")
        guard case .success(let verified) = s.tlsVerify(anchors: .defaultTrust, hostname: "localhost") else {
            return XCTFail("the generated chain verifies for localhost")
        }
        XCTAssertEqual(verified.first?.der, chain.first?.der)
        guard case .failure(let error) = s.tlsVerify(anchors: .defaultTrust, hostname: "other.example") else {
            return XCTFail("a chain for localhost must not verify for other.example")
        }
        XCTAssertEqual(error.code, 62, "X509_V_ERR_HOSTNAME_MISMATCH: \(error.text)")
    }

    func testPlainStreamHasNoTLSSession() throws {
        let loop = EventLoop(name: "test")
        let address = try XCTUnwrap(SocketAddress(ipLiteral: "127.0.0.1", port: origin.port))
        let s = try Stream(loop: loop, connectingTo: address, timeout: .seconds(10))
        let r = StreamRecorder()
        s.delegate = r
        run(loop) { !r.events.isEmpty }
        XCTAssertEqual(r.events, [.connected])
        XCTAssertNil(s.tlsPeerChain)
        XCTAssertFalse(s.tlsSessionReused)
        guard case .failure(let error) = s.tlsVerify(anchors: .defaultTrust, hostname: "localhost") else {
            return XCTFail("a plain stream has nothing to verify")
        }
        XCTAssertEqual(error.text, "no TLS peer chain")
        s.close()
    }
}
