import Foundation
import XCTest

/// The one way a test says "this machine lacks what I need": a skip on a developer's machine, a failure in CI.
/// CI sets `CI=true` (`.ci/run` exports it), where a missing tool or kernel feature means the runner is
/// set up wrong, and a skipped test would hide that the check never ran.
public enum Requirement {
    /// True when the environment variable `CI` is exactly `true`.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Returns if `condition` holds. Otherwise throws `XCTSkip(reason)`, or, under `CI=true`, records an
    /// `XCTFail` naming the reason and throws, so the test fails instead of skipping.
    public static func check(_ condition: Bool, _ reason: @autoclosure () -> String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        guard !condition else { return }
        let reason = reason()
        if isCI {
            XCTFail("CI=true: required, but missing: \(reason)", file: file, line: line)
            throw AirlockTestingError(.process, "CI=true: required, but missing: \(reason)")
        }
        throw XCTSkip(reason, file: file, line: line)
    }

    /// `check` that `path` is an executable file (a CLI tool the test runs).
    public static func tool(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try check(FileManager.default.isExecutableFile(atPath: path), "no executable \(path)", file: file, line: line)
    }
}
