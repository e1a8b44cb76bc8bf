import AirlockTesting
import Foundation
import XCTest

/// `airlock health` (the container's HEALTHCHECK): exit 0 only when the admin listener answers
/// `GET /healthz` with 200; a clear message and exit 1 otherwise.
final class HealthCommandTests: XCTestCase {
    private func health(_ arguments: [String]) throws -> ProcessResult {
        try runProcess(AirlockProcess.builtExecutable(), ["health"] + arguments, timeout: 20)
    }

    func testHealthyWhenTheAdminListenerAnswers200() throws {
        let origin = try TestOrigin(.respond { _ in .ok("hello") })
        defer { origin.stop() }
        let a = try Fixture.start(Fixture.gatewayConfig(upstreamPort: origin.port) + "\nadmin: 127.0.0.1:0\n")
        defer { a.stop() }
        let record = try XCTUnwrap(a.waitForLog(timeout: 5) { $0["event"] as? String == "airlock.admin" })
        let admin = try XCTUnwrap(record["port"] as? Int)

        let r = try health(["--admin", "127.0.0.1:\(admin)"])
        XCTAssertEqual(r.exitCode, 0, r.stderr)
        XCTAssertTrue(r.stdoutString.contains("ok"), r.stdoutString)

        XCTAssertTrue(origin.requests.isEmpty, "health asks the admin listener, not the origin")
    }

    func testUnhealthyWhenTheAnswerIsNot200() throws {
        let origin = try TestOrigin(.respond { _ in .status(503, "Service Unavailable") })
        defer { origin.stop() }
        let r = try health(["--admin", "127.0.0.1:\(origin.port)"])
        XCTAssertEqual(r.exitCode, 1)
        XCTAssertTrue(r.stderr.contains("answered 503"), r.stderr)
        XCTAssertEqual(origin.requests.first?.target, "/healthz")
    }

    func testUnhealthyWhenNothingListens() throws {
        let port = unusedLoopbackPort()
        let r = try health(["--admin", "127.0.0.1:\(port)"])
        XCTAssertEqual(r.exitCode, 1)
        XCTAssertTrue(r.stderr.contains("cannot reach the admin listener at 127.0.0.1:\(port)"), r.stderr)
    }

    func testUnhealthyWhenTheListenerNeverAnswers() throws {
        let origin = try TestOrigin(.silent)
        defer { origin.stop() }
        let r = try health(["--admin", "127.0.0.1:\(origin.port)", "--timeout", "1"])
        XCTAssertEqual(r.exitCode, 1)
        XCTAssertTrue(r.stderr.contains("cannot read from the admin listener"), r.stderr)
    }

    func testBadArgumentsAreRefusedWithTheOptionNamed() throws {
        let address = try health(["--admin", "not-an-address"])
        XCTAssertNotEqual(address.exitCode, 0)
        XCTAssertTrue(address.stderr.contains("--admin: expected HOST:PORT"), address.stderr)
        let timeout = try health(["--admin", "127.0.0.1:9", "--timeout", "0"])
        XCTAssertNotEqual(timeout.exitCode, 0)
        XCTAssertTrue(timeout.stderr.contains("--timeout: expected 1...60"), timeout.stderr)
    }
}
