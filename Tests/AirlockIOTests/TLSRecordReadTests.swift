@testable import AirlockIO
import AirlockTesting
import COpenSSL
import Foundation
import XCTest

// Foundation (through XCTest) has its own Stream.
private typealias Stream = AirlockIO.Stream

/// How TLS sessions take records off their socket (`TLSSession.configureRecordBuffers`):
/// with read-ahead one `recv` takes a whole record (and what follows it) instead of one for
/// the 5-byte header and one for the body, counted on OpenSSL's own socket BIO against a real
/// TLS origin on 127.0.0.1; and both contexts' sessions free their record buffers when empty.
final class TLSRecordReadTests: TLSOriginTestCase {
    func testABulkBodyTakesAboutOneSocketReadPerRecordNotTwo() throws {
        let (reads, records) = try socketReadsForABulkBody()
        // 1 MiB is at least 64 records of 16 KiB. Without read-ahead every record takes two
        // reads (its 5-byte header, then its body): 128 or more. With it, each read takes
        // what the socket holds up to OpenSSL's buffer.
        XCTAssertLessThan(reads, records * 3 / 2, "socket reads for \(records) records")
    }

    func testABulkBodyTakesSeveralRecordsPerSocketRead() throws {
        // OpenSSL's default buffer holds one record and a little more: a read per record or
        // more (72-78 here). A buffer of `TLSSession.readBufferBytes` takes up to four records
        // from a socket that holds them, as a bulk body's does while the loop relays it (36-37).
        let (reads, records) = try socketReadsForABulkBody()
        XCTAssertLessThanOrEqual(reads, records * 3 / 4, "socket reads for \(records) records")
    }

    /// Socket reads that returned bytes for a 1 MiB body from the TLS origin (counted on
    /// OpenSSL's socket BIO from the end of the handshake on), and the records the body took
    /// at least; the body is checked whole.
    private func socketReadsForABulkBody() throws -> (reads: Int, records: Int) {
        let loop = EventLoop(name: "test")
        let s = try tlsStream(loop)
        let r = StreamRecorder()
        s.delegate = r
        let reads = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        reads.initialize(to: 0)
        defer { reads.deallocate() }
        r.onConnected = {
            guard let bio = s.tls.flatMap({ SSL_get_rbio($0.ssl) }) else { return }
            BIO_set_callback_arg(bio, UnsafeMutableRawPointer(reads).assumingMemoryBound(to: CChar.self))
            BIO_set_callback_ex(bio, countSocketReads)
        }
        run(loop, seconds: 20) { !r.events.isEmpty }
        XCTAssertEqual(r.events, [.connected])
        let size = 1 << 20
        s.write(Array("GET /random/\(size) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8))
        run(loop, seconds: 20) { r.events.count > 1 }
        XCTAssertEqual(r.events, [.connected, .eof], "the origin ends with close_notify")
        s.close()

        let headEnd = try XCTUnwrap(r.received.indices.first { r.received[$0...].starts(with: Array("\r\n\r\n".utf8)) })
        let body = Array(r.received[(headEnd + 4)...])
        XCTAssertEqual(body.count, size)
        XCTAssertEqual(try sha256Hex(body), origin.sentBodies.first?.sha256, "the body arrived intact")
        XCTAssertGreaterThan(reads.pointee, 0, "the counter saw the socket reads")
        return (reads.pointee, size / 16384)
    }

    func testClientAndServerSessionsReadAheadAndReleaseTheirBuffersWhenEmpty() throws {
        let client = try TLSClientContext(caFiles: [pki.path("root.pem")], pinnedAnchors: [])
        let setup = TLSSetup(context: client, serverName: "localhost", session: nil, onNewSession: { _ in })
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("airlock-tls-reads-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try TLSServerContext(authority: try CertificateAuthority.create(inDirectory: dir, overwrite: .refuse))
        let sessions = [try XCTUnwrap(TLSSession(setup: setup, fd: -1)),
                        try XCTUnwrap(TLSSession(ctx: server.ctx, role: .server(server), fd: -1))]
        for session in sessions {
            XCTAssertEqual(SSL_get_read_ahead(session.ssl), 1, "server: \(session.isServer)")
            let mode = SSL_ctrl(session.ssl, SSL_CTRL_MODE, 0, nil)
            XCTAssertNotEqual(mode & Int(SSL_MODE_RELEASE_BUFFERS), 0, "server: \(session.isServer)")
            // The modes set before stay set.
            XCTAssertNotEqual(mode & Int(SSL_MODE_ENABLE_PARTIAL_WRITE), 0)
            XCTAssertNotEqual(mode & Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), 0)
        }
    }
}

/// A socket BIO's callback: counts the reads that returned bytes into the Int its argument points to.
private let countSocketReads: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, Int, Int32, Int, Int32,
                                              UnsafeMutablePointer<Int>?) -> Int = { bio, oper, _, _, _, _, ret, processed in
    if oper == BIO_CB_READ | BIO_CB_RETURN, ret > 0, (processed?.pointee ?? 0) > 0, let arg = BIO_get_callback_arg(bio) {
        UnsafeMutableRawPointer(arg).assumingMemoryBound(to: Int.self).pointee += 1
    }
    return Int(ret)
}
