@testable import AirlockIO
import AirlockTesting
import XCTest

/// A test against a real TLS origin on 127.0.0.1 (`TLSTestOrigin`), its certificates generated
/// for the test: made before each test, stopped and removed after.
class TLSOriginTestCase: XCTestCase {
    var pki: TLSTestPKI!
    var origin: TLSTestOrigin!

    override func setUpWithError() throws {
        try super.setUpWithError()
        pki = try TLSTestPKI.generate()
        origin = try TLSTestOrigin(pki: pki)
    }

    override func tearDown() {
        origin?.stop()
        pki?.remove()
        super.tearDown()
    }

    /// A stream connecting with TLS to the origin as "localhost", not yet run: `context`
    /// defaults to one trusting the test PKI.
    func tlsStream(_ loop: EventLoop, context: TLSClientContext? = nil, session: TLSSessionTicket? = nil,
                   onNewSession: @escaping (TLSSessionTicket) -> Void = { _ in }) throws -> AirlockIO.Stream {
        let ctx = try context ?? TLSClientContext(caFiles: [pki.path("root.pem")], pinnedAnchors: [])
        let address = try XCTUnwrap(SocketAddress(ipLiteral: "127.0.0.1", port: origin.port))
        return try AirlockIO.Stream(loop: loop, connectingTo: address, timeout: .seconds(10),
                                    tls: TLSSetup(context: ctx, serverName: "localhost", session: session,
                                                  onNewSession: onNewSession))
    }

    /// Runs `loop` until `done`, or for at most `seconds`.
    func run(_ loop: EventLoop, seconds: UInt64 = 10, until done: () -> Bool) {
        let deadline = EventLoop.nowNanos() + seconds * 1_000_000_000
        while !done() && EventLoop.nowNanos() < deadline { _ = loop.runOnce(blocking: false); usleep(200) }
    }
}

/// Records a stream's events and input (the input drained as it comes); `onConnected` runs
/// when `.connected` arrives.
final class StreamRecorder: AirlockIO.StreamDelegate {
    var events: [StreamEvent] = []
    var received: [UInt8] = []
    var onConnected: () -> Void = {}

    func streamReadable(_ stream: AirlockIO.Stream) {
        received += stream.withInput(max: stream.inputLength) { Array($0) }
        stream.drainInput(stream.inputLength)
    }

    func streamWritable(_ stream: AirlockIO.Stream) {}

    func stream(_ stream: AirlockIO.Stream, event: StreamEvent) {
        events.append(event)
        if event == .connected { onConnected() }
    }
}
