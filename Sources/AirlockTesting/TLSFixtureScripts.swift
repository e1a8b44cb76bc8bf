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

    /// `$AIRLOCK_PYTHON` if set, else the first executable `python3` on PATH. Falls back to /usr/bin/python3
    /// even if it does not exist, so the spawn failure names a path. It needs the `cryptography` package.
    public static func python() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["AIRLOCK_PYTHON"], !path.isEmpty { return path }
        let searchPath = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in searchPath.split(separator: ":") where !directory.isEmpty {
            let candidate = String(directory) + "/python3"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return "/usr/bin/python3"
    }
}
