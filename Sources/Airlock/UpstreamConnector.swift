import AirlockIO

/// The one upstream connector: resolve (then the route's egress filter), and dial the resolved
/// addresses one at a time. Exchanges (`Exchange+Upstream`), CONNECT tunnels (`Tunnel`)
/// and reachability probes (`ReachabilityMonitor`) use it. It decides nothing: after a failed
/// address the caller's machine says whether the next one is dialled (`hasMore`); the dial
/// itself (an `UpstreamConnection`, a raw `Stream`, a probe) is the caller's closure, and so is
/// its connect timeout.
struct UpstreamConnector {
    /// Why a resolve produced nothing to dial.
    enum ResolveFailure: Error {
        case unresolvable(String)       // the resolver's error text
        case refused(GatewayError)      // every address was refused by the egress filter (403)
    }

    /// What one dial attempt did.
    enum Dial {
        case dialling(SocketAddress)    // the connect is under way: its stream reports the outcome
        case ownListener(SocketAddress) // the address is this gateway's own listener (508, a loop)
        case failed(String?)            // no socket could be opened for it (its error), or no address is left (nil)
    }

    private(set) var addresses: [SocketAddress] = []
    private var next = 0
    /// The address dialled last.
    private(set) var current: SocketAddress?

    /// An address is left to dial.
    var hasMore: Bool { next < addresses.count }

    /// Resolves `host:port` and keeps what `filter` allows (the route's egress policy; nil keeps all).
    static func resolve(_ resolver: Resolver, host: String, port: UInt16,
                        filter: (([SocketAddress]) -> Result<[SocketAddress], GatewayError>)?,
                        _ done: @escaping (Result<[SocketAddress], ResolveFailure>) -> Void) {
        resolver.resolve(host: host, port: port) { result in
            switch result {
            case .failure(let err):
                done(.failure(.unresolvable(err.detail)))
            case .success(let resolved):
                switch filter?(resolved) ?? .success(resolved) {
                case .success(let allowed): done(.success(allowed))
                case .failure(let e): done(.failure(.refused(e)))
                }
            }
        }
    }

    /// Starts over with freshly resolved addresses.
    mutating func start(_ resolved: [SocketAddress]) {
        addresses = resolved
        next = 0
    }

    /// Dials the next address with `dial`. A descriptor shortage that `freeDescriptor` relieves
    /// (an idle pooled connection gives way) tries the same address again.
    mutating func dialNext(isSelf: (SocketAddress) -> Bool, freeDescriptor: () -> Bool,
                           _ dial: (SocketAddress) throws -> Void) -> Dial {
        guard next < addresses.count else { return .failed(nil) }
        let addr = addresses[next]
        next += 1
        current = addr
        if isSelf(addr) { return .ownListener(addr) }
        while true {   // bounded: each retry closed one idle pooled connection
            do {
                try dial(addr)
                return .dialling(addr)
            } catch let e as IOError where e.isDescriptorExhaustion && freeDescriptor() {
                continue
            } catch {
                return .failed("\(error)")
            }
        }
    }
}
