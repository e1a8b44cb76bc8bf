// STUB: stands in for the real gateway so the CLI compiles on the `config`
// branch. Dropped at merge in favour of Sources/Airlock/Gateway*.swift.
import Logging

public final class Gateway: @unchecked Sendable {
    public init(config: AirlockConfig, logger: Logger) throws {
        fatalError("Gateway is a stub on this branch")
    }

    public var boundPort: UInt16 { fatalError("Gateway is a stub on this branch") }

    public func start() throws { fatalError("Gateway is a stub on this branch") }

    public func run() throws { fatalError("Gateway is a stub on this branch") }

    public func shutdown() {}
}
