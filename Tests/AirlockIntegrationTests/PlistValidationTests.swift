import AirlockTesting
import Foundation
import XCTest

/// `serializer: plist` through real sockets: an origin serving property lists behind a plist route
/// (answering rejects with 422) and a compound json-or-plist route.
final class PlistValidationTests: XCTestCase {
    var origin: TestOrigin?
    var airlock: AirlockProcess?

    override func tearDown() {
        airlock?.stop()
        origin?.stop()
    }

    /// A real binary property list from Python's plistlib.
    static let binary: [UInt8] = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import plistlib, sys; sys.stdout.buffer.write(plistlib.dumps({'name': 'airlock', 'ids': list(range(300))}, fmt=plistlib.FMT_BINARY))",
        ]
        let output = Pipe()
        process.standardOutput = output
        try? process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(data)
    }()

    /// The same with its top object index pointing past the object count.
    static let broken: [UInt8] = {
        var bytes = binary
        for k in 0..<8 { bytes[bytes.count - 16 + k] = 0xFF }
        return bytes
    }()

    static func answer(_ req: TestRequest) -> TestResponse {
        let name = req.target.split(separator: "/").last.map(String.init) ?? ""
        func body(_ type: String, _ bytes: [UInt8]) -> TestResponse {
            TestResponse(status: 200, reason: "OK", headers: [("Content-Type", type)], body: .bytes(bytes))
        }
        switch name {
        case "binary": return body("application/x-plist", binary)
        case "broken": return body("application/x-plist", broken)
        case "octets": return body("application/octet-stream", binary)
        case "json": return body("application/json", Array(#"{"a":1}"#.utf8))
        default: return TestResponse(status: 404, reason: "Not Found", headers: [], body: .bytes([]))
        }
    }

    private func start() throws -> AirlockProcess {
        let o = try TestOrigin(.respond(Self.answer))
        origin = o
        let up = "http://127.0.0.1:\(o.port)"
        let a = try Fixture.start("""
        listen: 127.0.0.1:0
        workers: 2
        \(Fixture.limitsYAML([:]))
        routes:
          - name: plist
            match: { host: "*", path_prefix: /p/ }
            upstream: \(up)
            response: { serializer: plist, reject_status: 422 }
          - name: either
            match: { host: "*", path_prefix: /c/ }
            upstream: \(up)
            response: { serializer: compound, serializers: [json, plist] }
        """)
        airlock = a
        return a
    }

    private func get(_ c: RawClient, _ target: String) throws -> RawResponse {
        try c.exchange("GET \(target) HTTP/1.1\r\nHost: gw.test\r\n\r\n")
    }

    private func assertRejected(_ r: RawResponse, status: Int, reason: String, code: Int, message: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, status, r.bodyString, file: file, line: line)
        XCTAssertEqual(r.header("Content-Type")?.hasPrefix("application/json"), true, file: file, line: line)
        let body = Fixture.json(r.body)
        XCTAssertEqual(body["error"] as? String, "rejected-response", r.bodyString, file: file, line: line)
        XCTAssertEqual(body["reason"] as? String, reason, r.bodyString, file: file, line: line)
        XCTAssertEqual(body["code"] as? Int, code, r.bodyString, file: file, line: line)
        XCTAssertTrue((body["message"] as? String ?? "").hasPrefix(message), r.bodyString, file: file, line: line)
        XCTAssertNotNil(body["request_id"] as? String, file: file, line: line)
    }

    func testBinaryPlistRelayedBrokenAndMistypedRejected() throws {
        XCTAssertTrue(Self.binary.starts(with: Array("bplist00".utf8)), "python3 produced a binary plist")
        let a = try start()
        let c = try RawClient(port: a.port)
        defer { c.close() }

        let ok = try get(c, "/p/binary")
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.body, Self.binary, "relayed byte for byte")
        XCTAssertEqual(ok.header("Content-Type"), "application/x-plist")

        assertRejected(try get(c, "/p/broken"), status: 422, reason: "invalid-plist", code: -1017,
                       message: "Response body is not a valid property list: binary: top object")
        assertRejected(try get(c, "/p/octets"), status: 422, reason: "unacceptable-content-type", code: -1016,
                       message: "Request failed: unacceptable content-type: application/octet-stream")

        // In a compound after json: json declines on the content type, plist accepts.
        let either = try get(c, "/c/binary")
        XCTAssertEqual(either.status, 200)
        XCTAssertEqual(either.body, Self.binary)
        XCTAssertEqual(try get(c, "/c/json").bodyString, #"{"a":1}"#)
        XCTAssertEqual(try get(c, "/p/binary").status, 200, "the connection survives the rejects")
    }
}
