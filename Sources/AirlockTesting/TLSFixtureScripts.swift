import Foundation
import Glibc

/// Where the Python TLS fixtures live (`Tests/Fixtures/tls/` in the package) and which interpreter runs them.
public enum TLSFixtureScripts {
    /// `<package root>/Tests/Fixtures/tls`, the package root derived from this source file's #filePath.
    static let directory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // AirlockTesting
        .deletingLastPathComponent()  // Sources
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Tests/Fixtures/tls").path

    static var makePKI: String { directory + "/make_pki.py" }
    static var origin: String { directory + "/tls_origin.py" }

    /// The interpreter the tests run Python with: `$AIRLOCK_PYTHON` if set; else the virtual
    /// environment `make setup` makes (`.build/test-venv`, Debian's python3 with cryptography,
    /// requests and prometheus_client), so a pyenv or system `python3` on PATH makes no
    /// difference; else the first executable `python3` on PATH. Falls back to /usr/bin/python3
    /// even if it does not exist, so the spawn failure names a path.
    public static func python() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["AIRLOCK_PYTHON"], !path.isEmpty { return path }
        if access(testVenvPython, X_OK) == 0 { return testVenvPython }
        let searchPath = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in searchPath.split(separator: ":") where !directory.isEmpty {
            let candidate = String(directory) + "/python3"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return "/usr/bin/python3"
    }

    /// `.build/test-venv/bin/python3` under the package root (`make setup` creates it).
    public static var testVenvPython: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // AirlockTesting
            .deletingLastPathComponent()  // Sources
            .deletingLastPathComponent()  // package root
            .appendingPathComponent(".build/test-venv/bin/python3").path
    }

    /// Whether `python()` can import `module`; a test that needs it checks this through
    /// `Requirement` (a skip with the reason here, a failure under CI=true).
    public static func canImport(_ module: String) -> Bool {
        (try? runProcess(python(), ["-c", "import \(module)"], timeout: 30))?.exitCode == 0
    }
}
