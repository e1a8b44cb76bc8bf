// ProcessInfo.activeProcessorCount (cgroup-aware) for `workers: auto`. FoundationEssentials, not
// Foundation: no ICU, and swift-argument-parser links it into the binary anyway.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import AirlockSerialization

/// The whole configuration of one Airlock process, typed and validated.
///
/// Built by `load(yaml:)` / `load(file:)` or in code; code that changes a
/// loaded config (the CLI's `--listen`) calls `validate()` again.
public struct AirlockConfig: Sendable, Equatable {
    public var listen: ListenAddress
    /// Event loops; `auto` in the file is resolved to the active core count at load. Setting a
    /// number makes `workersSetting` `.count`.
    public var workers: Int { didSet { workersSetting = .count } }
    /// How `workers` was given: `auto` (resolved to `autoWorkers`) or a number. `check-config`
    /// prints both the setting and what it resolves to.
    public private(set) var workersSetting: WorkersSetting
    /// Permits `upstream: origin` for host `*` on a non-loopback listener.
    public var allowOpenProxy: Bool
    public var limits: LimitsConfig
    /// Tried in order; the first match wins.
    public var routes: [RouteConfig]
    public var admin: AdminConfig
    public var rejects: RejectsConfig
    /// Whether workers write through io_uring (`auto`) or one `send` per stream (`off`).
    public var ioUring: IOUringMode
    /// `reachability:`: the probe interval of fixed upstreams (`GET /upstreams`).
    public var reachability = ReachabilityConfig()
    /// `ca:`: the files of the local CA for intercepted CONNECT tunnels (the gateway opens them at
    /// start, `OpenedConfig`); nil without one.
    public var ca: CAConfig?

    public enum WorkersSetting: Sendable, Equatable {
        case auto      // one per active core, resolved at load
        case count     // the number written
    }

    public enum IOUringMode: String, Sendable, Equatable, CaseIterable {
        /// Each loop iteration's writes go out in one io_uring submission where the
        /// kernel allows it; one `send` per stream where it does not.
        case auto
        /// Always one `send` per stream.
        case off
    }

    public init(
        listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080),
        workers: Int? = nil,
        allowOpenProxy: Bool = false,
        limits: LimitsConfig = LimitsConfig(),
        routes: [RouteConfig],
        admin: AdminConfig = AdminConfig(),
        rejects: RejectsConfig = RejectsConfig(),
        ioUring: IOUringMode = .auto
    ) {
        self.listen = listen
        self.workers = workers ?? Self.autoWorkers
        self.workersSetting = workers == nil ? .auto : .count
        self.allowOpenProxy = allowOpenProxy
        self.limits = limits
        self.routes = routes
        self.admin = admin
        self.rejects = rejects
        self.ioUring = ioUring
    }

    /// `listen: 127.0.0.1:8080`, `workers: auto`, one route `default` for
    /// host `*` to `origin`: a loopback-only forward proxy. Its route validates responses
    /// report-only with the http serializer, so a new user sees reject records while no
    /// traffic is blocked.
    public static var embeddedDefault: AirlockConfig {
        AirlockConfig(routes: [RouteConfig(name: "default", host: .any, upstream: .origin, response: .reportOnlyHTTP)])
    }

    /// What `workers: auto` means on this machine: active cores, clamped to 1...256.
    public static var autoWorkers: Int {
        min(max(ProcessInfo.processInfo.activeProcessorCount, 1), maxWorkers)
    }

    static let maxWorkers = 256

    /// `workers: auto`: one per active core (`autoWorkers`), remembered as `auto`.
    public mutating func setWorkersAuto() {
        workers = Self.autoWorkers
        workersSetting = .auto
    }

    /// The first route, in order, whose host pattern matches `host` (lowercase,
    /// no port) and whose path prefix, if any, prefixes `path`.
    public func route(host: String, path: String) -> RouteConfig? {
        routes.first { $0.matches(host: host, path: path) }
    }
}
