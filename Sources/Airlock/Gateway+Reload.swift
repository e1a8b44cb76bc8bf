public import AirlockConfig
import AirlockIO
import AirlockSecurity
import Logging

/// What a reload did: the new generation and what changed, or every reason it was refused.
public struct ReloadOutcome: Sendable {
    public var issues: [ConfigError.Issue] = []
    public var generation = 0
    public var added: [String] = []
    public var removed: [String] = []
    public var changed: [String] = []

    public var succeeded: Bool { issues.isEmpty }

    /// `POST /reload`'s body.
    var json: String {
        func list(_ names: [String]) -> String {
            "[" + names.map { n -> String in var s = ""; JSON.appendString(n, to: &s); return s }.joined(separator: ",") + "]"
        }
        if succeeded {
            return "{\"reloaded\":true,\"generation\":\(generation),\"routes_added\":\(list(added)),"
                + "\"routes_removed\":\(list(removed)),\"routes_changed\":\(list(changed))}"
        }
        let items = issues.map { i -> String in
            var k = "", m = ""
            JSON.appendString(i.keyPath, to: &k)
            JSON.appendString(i.message, to: &m)
            return "{\"key_path\":\(k),\"message\":\(m)}"
        }
        return "{\"error\":\"reload-failed\",\"reloaded\":false,\"issues\":[" + items.joined(separator: ",") + "]}"
    }
}

extension Gateway {
    /// Settings a running process cannot take from a new file: the listeners and worker threads
    /// are bound, and these limits are divided among workers or sized at start.
    static func restartOnly(_ old: AirlockConfig, _ new: AirlockConfig) -> [ConfigError.Issue] {
        var issues: [ConfigError.Issue] = []
        func check<T: Equatable>(_ key: String, _ a: T, _ b: T, _ text: (T) -> String) {
            guard a != b else { return }
            issues.append(ConfigError.Issue(keyPath: key, message: "cannot change without a restart (running with "
                + "\(text(a)), the new configuration says \(text(b)))"))
        }
        check("listen", old.listen, new.listen) { $0.description }
        check("workers", old.workers, new.workers) { String($0) }
        check("admin", old.admin.address, new.admin.address) { $0?.description ?? "off" }
        check("admin_allow_remote", old.admin.allowRemote, new.admin.allowRemote) { String($0) }
        if old.admin.token != new.admin.token {   // never printed, so not `check`
            issues.append(ConfigError.Issue(keyPath: "admin_token", message: "cannot change without a restart"))
        }
        check("io_uring", old.ioUring, new.ioUring) { $0.rawValue }
        check("rejects.keep", old.rejects.keep, new.rejects.keep) { String($0) }
        check("limits.max_connections", old.limits.maxConnections, new.limits.maxConnections) { String($0) }
        check("limits.max_connections_per_upstream", old.limits.maxConnectionsPerUpstream,
              new.limits.maxConnectionsPerUpstream) { String($0) }
        check("limits.upstream_queue", old.limits.upstreamQueue, new.limits.upstreamQueue) { String($0) }
        check("limits.max_idle_per_upstream", old.limits.maxIdlePerUpstream, new.limits.maxIdlePerUpstream) { String($0) }
        check("reachability", old.reachability, new.reachability) { _ in "other settings" }
        return issues
    }

    /// Reloads the configuration (on the acceptor loop): reads it again through
    /// `reloadSource`, validates and opens it fully, refuses it whole if anything is wrong or a
    /// restart-only setting changed, and otherwise hands every worker the new context. New
    /// exchanges use the new routes, pins, validators, serializers, CA and limits; exchanges in
    /// flight finish with the `Route` they started with; idle client and pooled upstream
    /// connections stay, except pooled ones whose trust material changed.
    func reload(trigger: String) -> ReloadOutcome {
        var outcome = ReloadOutcome()
        guard let source = reloadSource else {
            outcome.issues = [ConfigError.Issue(keyPath: "", message: "reload is not available in this process")]
            return reloadFailed(outcome, trigger: trigger)
        }
        let opened: OpenedConfig
        do {
            opened = try source()
        } catch let error as ConfigError {
            outcome.issues = error.issues
            return reloadFailed(outcome, trigger: trigger)
        } catch {
            outcome.issues = [ConfigError.Issue(keyPath: "", message: "\(error)")]
            return reloadFailed(outcome, trigger: trigger)
        }
        let old = config
        let new = opened.config
        outcome.issues = Self.restartOnly(old, new)
        guard outcome.succeeded else { return reloadFailed(outcome, trigger: trigger) }

        let oldRoutes = Dictionary(old.routes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newNames = Set(new.routes.map(\.name))
        outcome.added = new.routes.map(\.name).filter { oldRoutes[$0] == nil }
        outcome.removed = old.routes.map(\.name).filter { !newNames.contains($0) }
        outcome.changed = new.routes.filter { r in oldRoutes[r.name].map { $0 != r } ?? false }.map(\.name)

        let routeMetrics = context.metrics.adoptRoutes(new)
        let reachability = Reachabilities(config: new, logger: logger, metrics: context.metrics,
                                          routeMetrics: routeMetrics, carryingOver: context.reachability)
        let next = context.reloaded(opened, reachability: reachability)
        let staleTrust = Self.staleTrust(old: context, new: next)
        context = next
        config = new
        monitor?.context = next
        admin?.reachability = reachability
        admin?.ca = opened.ca?.authority
        for w in workers {
            w.loop.execute { w.reconfigure(next, staleTrust: staleTrust) }
        }
        outcome.generation = next.generation
        logger.info("airlock.reloaded", metadata: [
            "trigger": .string(trigger),
            "generation": .stringConvertible(next.generation),
            "routes": .stringConvertible(new.routes.count),
            "routes_added": .array(outcome.added.map { .string($0) }),
            "routes_removed": .array(outcome.removed.map { .string($0) }),
            "routes_changed": .array(outcome.changed.map { .string($0) }),
            "pooled_trust_dropped": .stringConvertible(staleTrust.count),
        ])
        return outcome
    }

    private func reloadFailed(_ outcome: ReloadOutcome, trigger: String) -> ReloadOutcome {
        logger.error("airlock.reload-failed", metadata: [
            "trigger": .string(trigger),
            "error": .string(outcome.issues.map(\.description).joined(separator: "; ")),
            "issues": .array(outcome.issues.map { .dictionary(["key_path": .string($0.keyPath), "message": .string($0.message)]) }),
        ])
        return outcome
    }

    /// The trust identities (`RouteSecurity.trustIdentity`) whose material differs between the
    /// running and the reloaded configuration: the same identity string (pins, policy and file
    /// paths) but other contents in its CA or certificate files. Pooled connections under them
    /// were verified against what no longer holds. (A changed pin or policy changes the identity
    /// itself, so such connections are never checked out again and idle out.)
    static func staleTrust(old: GatewayContext, new: GatewayContext) -> Set<String> {
        Set(old.trustMaterial.compactMap { id, was in new.trustMaterial[id].map { $0 != was ? id : nil } ?? nil })
    }
}

extension GatewayContext {
    /// Each trust identity of `config` with a digest of the files it names, read now (at start
    /// and at each reload, so a later rotation of the files is seen against it).
    static func trustMaterial(of config: AirlockConfig) -> [String: [UInt8]] {
        Dictionary(config.routes.map { ($0.security.trustIdentity, material(of: $0.security)) },
                   uniquingKeysWith: { a, _ in a })
    }

    static func material(of security: RouteSecurity) -> [UInt8] {
        var bytes: [UInt8] = []
        for path in security.caFiles + security.certificateFiles.flatMap({ $0 }) {
            bytes += Array(path.utf8) + [0]
            bytes += (try? LocalFile.read(path)) ?? []
        }
        return SHA256.hash(bytes)
    }
}
