import AirlockConfig
public import Logging
import Synchronization

/// Process-wide logging setup: JSON lines on standard output.
public enum AirlockLogging {
    /// Bootstraps swift-log with `JSONLogHandler` on standard output at
    /// `level`. swift-log allows one bootstrap per process; later calls do
    /// nothing (the first level stays).
    public static func bootstrap(level: Logger.Level) {
        guard once.claim() else { return }
        LoggingSystem.bootstrap({ label, provider in
            JSONLogHandler(label: label, level: level, sink: .standardOutput, metadataProvider: provider)
        }, metadataProvider: nil)
    }

    private static let once = OnceFlag()

    /// The `airlock.failed` record (critical): the start failed. `error` is the error's text;
    /// a configuration error also lists each problem with its key path in `issues`
    /// (`[{"key_path": ..., "message": ...}]`).
    public static func logStartFailure(_ error: any Error, to logger: Logger) {
        var metadata: Logger.Metadata = ["error": .string(String(describing: error))]
        if let config = error as? ConfigError {
            metadata["error"] = .string(config.issues.map(\.description).joined(separator: "; "))
            metadata["issues"] = .array(config.issues.map {
                .dictionary(["key_path": .string($0.keyPath), "message": .string($0.message)])
            })
        }
        logger.critical("airlock.failed", metadata: metadata)
    }
}

/// True exactly once, for the first caller, from any thread.
private final class OnceFlag: Sendable {
    private let claimed = Mutex(false)

    func claim() -> Bool {
        claimed.withLock { claimed in
            if claimed { return false }
            claimed = true
            return true
        }
    }
}
