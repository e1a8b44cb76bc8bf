import AirlockConfig
import AirlockIO
import Logging

extension Gateway {
    /// The admin listener's bound port (the real one when the configuration said 0); nil when
    /// it is off or could not be bound.
    public var adminPort: UInt16? { admin?.address.port }

    /// Binds the admin listener on the acceptor loop. A configured address that cannot be bound
    /// fails the start; the default one (127.0.0.1:9090, perhaps taken by another Airlock) only
    /// leaves the gateway without its admin listener, which `start` logs.
    func startAdmin(rejects: RejectLog, metrics: GatewayMetrics, reachability: Reachabilities,
                    ca: CertificateAuthority?) throws {
        guard let address = config.admin.address else { return }
        do {
            admin = try AdminServer(loop: mainLoop, address: address, rejects: rejects, token: config.admin.token,
                                    isReady: { [unowned self] in self.isTakingTraffic },
                                    tasks: TaskDirectory(loop: mainLoop), events: TaskEventHub(loop: mainLoop),
                                    metrics: metrics, reachability: reachability, ca: ca)
        } catch let error where config.admin.isDefaultAddress {
            adminUnavailable = "\(error)"
        } catch {
            // The start fails naming the key, as a configuration problem would.
            throw ConfigError(keyPath: "admin", message: (error as? IOError)?.detail ?? "\(error)")
        }
    }

    /// Gives the admin listener the workers' tasks and the workers the events hub, once the
    /// workers exist and before their loops start (so nothing here crosses threads later).
    func attachTasks() {
        guard let admin else { return }
        admin.tasks?.workers = workers
        for w in workers { w.taskEvents = admin.events }
    }

    /// `airlock.admin` with the bound port, or why there is none.
    func logAdmin() {
        if let admin {
            logger.info("airlock.admin", metadata: [
                "address": .string(admin.address.host),
                "port": .stringConvertible(Int(admin.address.port)),
                "paths": .string("/ /rejects /healthz /readyz /metrics /upstreams /ca /tasks /events"),
            ])
        } else if let adminUnavailable {
            logger.warning("airlock.admin-unavailable", metadata: [
                "address": .string(config.admin.address?.description ?? "-"),
                "error": .string(adminUnavailable),
            ])
        }
    }
}
