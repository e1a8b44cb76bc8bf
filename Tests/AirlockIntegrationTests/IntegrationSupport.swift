import AirlockTesting
import Foundation
import XCTest

/// Shared helpers: configs for a gateway in front of a test origin, and JSON decoding.
enum Fixture {
    /// The limits every test runs with, overridden per test.
    static func limitsYAML(_ overrides: [String: String]) -> String {
        var l = ["header_timeout": "2s", "upstream_timeout": "3s", "connect_timeout": "2s"]
        l.merge(overrides) { $1 }
        return "limits:\n" + l.sorted { $0.key < $1.key }.map { "  \($0.key): \($0.value)" }.joined(separator: "\n")
    }

    static func gatewayConfig(upstreamPort: UInt16, limits: [String: String] = [:]) -> String {
        """
        listen: 127.0.0.1:0
        workers: 2
        \(limitsYAML(limits))
        routes:
          - name: api
            match: { host: "*" }
            upstream: http://127.0.0.1:\(upstreamPort)
        """
    }

    static func forwardConfig(limits: [String: String] = [:], ioUring: String = "auto") -> String {
        """
        listen: 127.0.0.1:0
        workers: 2
        io_uring: \(ioUring)
        \(limitsYAML(limits))
        routes:
          - name: default
            match: { host: "*" }
            upstream: origin
        """
    }

    static func start(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) throws -> AirlockProcess {
        try AirlockProcess(executable: AirlockProcess.builtExecutable(), configYAML: yaml)
    }

    static func json(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    static func tempFile(_ name: String) -> String {
        let dir = NSTemporaryDirectory() + "airlock-it-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + "/" + name
    }
}

extension RawClient {
    /// Sends `text` and reads one response.
    func exchange(_ text: String, method: String = "GET") throws -> RawResponse {
        try send(text)
        return try readResponse(timeout: 10, requestMethod: method)
    }
}
