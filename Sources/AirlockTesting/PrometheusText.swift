import Foundation

/// A `/metrics` body parsed by the reference Prometheus client's parser (Python's
/// `prometheus_client`, run from `Tests/Fixtures/prometheus/parse_exposition.py`), so a test
/// checks the exposition the way a scraper reads it, not with a parser of our own.
public struct PrometheusText: Sendable {
    public struct Sample: Sendable, Equatable {
        public let name: String
        public let labels: [String: String]
        public let value: Double
    }

    /// Family name → type (`counter`, `gauge`, `histogram`).
    public let types: [String: String]
    /// Family name → its `# HELP` text ("" when the family has none).
    public let docs: [String: String]
    public let samples: [Sample]

    static var script: String {
        URL(fileURLWithPath: TLSFixtureScripts.directory).deletingLastPathComponent()
            .appendingPathComponent("prometheus/parse_exposition.py").path
    }

    /// Skips (fails under CI=true) when the interpreter cannot import `prometheus_client`.
    public static func requireParser(file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try runProcess(TLSFixtureScripts.python(), ["-c", "import prometheus_client.parser"], timeout: 30)
        try Requirement.check(r.exitCode == 0, "\(TLSFixtureScripts.python()) cannot import prometheus_client (make test-setup)",
                              file: file, line: line)
    }

    /// Parses `body`; throws with the parser's message when it is not Prometheus text.
    public init(_ body: [UInt8]) throws {
        let path = NSTemporaryDirectory() + "airlock-metrics-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).txt"
        try Data(body).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try runProcess(TLSFixtureScripts.python(), [Self.script, path], timeout: 30)
        guard r.exitCode == 0,
              let root = try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any],
              let types = root["types"] as? [String: String],
              let raw = root["samples"] as? [[String: Any]] else {
            throw AirlockTestingError(.process, "prometheus_client could not parse the exposition: \(r.stderr)")
        }
        self.types = types
        docs = root["docs"] as? [String: String] ?? [:]
        samples = raw.compactMap { s in
            guard let name = s["name"] as? String, let value = s["value"] as? Double else { return nil }
            return Sample(name: name, labels: s["labels"] as? [String: String] ?? [:], value: value)
        }
    }

    /// The value of the one sample named `name` whose labels include `labels`; nil if none.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { s in s.name == name && labels.allSatisfy { k, v in s.labels[k] == v } }?.value
    }
}
