import XCTest
@testable import AirlockConfig

/// The example from the configuration reference, verbatim.
let fullExampleYAML = """
    listen: 127.0.0.1:8080
    workers: auto                 # one event loop per core; or an integer 1..256
    allow_open_proxy: false       # see below
    io_uring: auto                # or off: one send per connection
    limits:
      request_line_bytes: 8192    # longer -> 414
      header_bytes: 65536         # whole header block; larger -> 431
      header_count: 100           # more -> 431
      body_bytes: 104857600       # declared larger -> 413
      header_timeout: 10s         # client must finish its head in this time -> 408 + close
      idle_timeout: 75s           # keep-alive idle, both sides
      connect_timeout: 5s
      upstream_timeout: 60s       # no byte from upstream for this long -> 504
      drain_timeout: 10s          # on SIGTERM: in-flight exchanges get this long
      max_idle_per_upstream: 64   # pool cap per worker per upstream
      max_connections: 10000      # per process; accept pauses above it
    routes:
      - name: api
        match: { host: api.example.test, path_prefix: /v1 }   # exact host or "*.suffix" or "*"; optional path_prefix
        upstream: http://127.0.0.1:9000     # gateway: send this route's requests there
      - name: default
        match: { host: "*" }
        upstream: origin                    # forward proxy: go to the host the client named

    """

/// A minimal valid route list, appended to documents that test other keys.
let defaultRouteYAML = """
    routes:
      - name: default
        match: { host: "*" }
        upstream: origin

    """

/// The issues `load(yaml:)` reports; fails the test if it loads.
func loadIssues(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) -> [ConfigError.Issue] {
    do {
        _ = try AirlockConfig.load(yaml: yaml)
        XCTFail("expected a ConfigError", file: file, line: line)
        return []
    } catch let error as ConfigError {
        return error.issues
    } catch {
        XCTFail("expected a ConfigError, got \(error)", file: file, line: line)
        return []
    }
}

/// Asserts `yaml` fails to load with exactly one issue, at `keyPath`, whose
/// message contains `fragment`.
func assertSingleIssue(
    _ yaml: String, at keyPath: String, contains fragment: String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    let issues = loadIssues(yaml, file: file, line: line)
    XCTAssertEqual(issues.map(\.keyPath), [keyPath], "\(issues)", file: file, line: line)
    if let issue = issues.first, !fragment.isEmpty {
        XCTAssertTrue(issue.message.contains(fragment), "\"\(issue.message)\" lacks \"\(fragment)\"", file: file, line: line)
    }
}

/// Loads `yaml`, failing the test with the issues if it does not load.
func assertLoads(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) -> AirlockConfig? {
    do {
        return try AirlockConfig.load(yaml: yaml)
    } catch {
        XCTFail("expected to load, got:\n\(error)", file: file, line: line)
        return nil
    }
}

/// One route with the given `match` and `upstream` lines (flow mapping text).
func routeYAML(host: String = "\"*\"", pathPrefix: String? = nil, upstream: String = "origin", name: String = "r") -> String {
    let prefix = pathPrefix.map { ", path_prefix: \($0)" } ?? ""
    return """
        routes:
          - name: \(name)
            match: { host: \(host)\(prefix) }
            upstream: \(upstream)

        """
}
