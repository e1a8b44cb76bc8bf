import CLibevent
import Glibc

/// Asynchronous name resolution on a loop through libevent's evdns (never a blocking
/// getaddrinfo on a loop thread). IP literals and "localhost" answer at once.
public final class Resolver {
    private var dns: OpaquePointer?
    /// libevent requires the resolver to be freed before its event base.
    private let loop: EventLoop

    /// `nameservers`: "IP" or "IP:port" entries to use instead of /etc/resolv.conf's.
    public init(loop: EventLoop, nameservers: [String]? = nil) {
        self.loop = loop
        if let nameservers {
            dns = evdns_base_new(loop.base, EVDNS_BASE_DISABLE_WHEN_INACTIVE)
            if let d = dns {
                for ns in nameservers { _ = evdns_base_nameserver_ip_add(d, ns) }
            }
        } else {
            // Read resolv.conf; do not keep the loop alive when idle.
            dns = evdns_base_new(loop.base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE)
            if dns == nil { dns = evdns_base_new(loop.base, EVDNS_BASE_DISABLE_WHEN_INACTIVE) }
        }
        if let d = dns { _ = evdns_base_load_hosts(d, nil) }
    }

    deinit { if let d = dns { evdns_base_free(d, 0) } }

    /// Resolves `host` (a name, an IP literal, or "[v6]") to addresses with `port`.
    /// `completion` runs on the loop, possibly before `resolve` returns.
    public func resolve(host: String, port: UInt16,
                        completion: @escaping (Result<[SocketAddress], IOError>) -> Void) {
        if let a = SocketAddress(ipLiteral: host, port: port) {
            completion(.success([a]))
            return
        }
        // RFC 6761 special-use names are answered here and never sent to a nameserver.
        if host == "localhost" || host.hasSuffix(".localhost") {
            completion(.success([SocketAddress(ipLiteral: "127.0.0.1", port: port)!]))
            return
        }
        if host == "invalid" || host.hasSuffix(".invalid") {
            completion(.failure(IOError(.resolve, "\(host): name does not exist (RFC 6761 .invalid)")))
            return
        }
        guard let d = dns else {
            completion(.failure(IOError(.resolve, "no DNS resolver for \(host)")))
            return
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        let box = ResolveRequest(host: host, port: port, completion: completion)
        let ctx = Unmanaged.passRetained(box).toOpaque()
        _ = evdns_getaddrinfo(d, host, nil, &hints, resolverCallback, ctx)
    }
}

extension Resolver {
    /// The system resolver's (glibc's) words for one of libevent's `EVUTIL_EAI_*` codes, as
    /// getaddrinfo would have said it: libevent's own table (`evutil_gai_strerror`) has BSD's
    /// text ("nodename nor servname provided, or not known"). libevent's text for a code glibc has
    /// no counterpart for (a cancelled request).
    static func describe(_ code: Int32) -> String {
        let native: Int32? = switch code {
        case EVUTIL_EAI_NONAME: EAI_NONAME
        case EVUTIL_EAI_AGAIN: EAI_AGAIN
        case EVUTIL_EAI_FAIL: EAI_FAIL
        case EVUTIL_EAI_NODATA: glibcEAINoData
        case EVUTIL_EAI_ADDRFAMILY: glibcEAIAddrFamily
        case EVUTIL_EAI_FAMILY: EAI_FAMILY
        case EVUTIL_EAI_MEMORY: EAI_MEMORY
        case EVUTIL_EAI_SERVICE: EAI_SERVICE
        case EVUTIL_EAI_SOCKTYPE: EAI_SOCKTYPE
        case EVUTIL_EAI_BADFLAGS: EAI_BADFLAGS
        case EVUTIL_EAI_SYSTEM: EAI_SYSTEM
        default: nil
        }
        return String(cString: native.map { gai_strerror($0) } ?? evutil_gai_strerror(code))
    }

    // glibc's netdb.h declares these two only under _GNU_SOURCE; the values are its ABI.
    private static let glibcEAINoData: Int32 = -5
    private static let glibcEAIAddrFamily: Int32 = -9
}

private final class ResolveRequest {
    let host: String
    let port: UInt16
    let completion: (Result<[SocketAddress], IOError>) -> Void

    init(host: String, port: UInt16, completion: @escaping (Result<[SocketAddress], IOError>) -> Void) {
        self.host = host
        self.port = port
        self.completion = completion
    }

    func finish(_ result: Int32, _ res: UnsafeMutablePointer<addrinfo>?) {
        guard result == 0, res != nil else {
            let why = Resolver.describe(result)
            completion(.failure(IOError(.resolve, "\(host): \(why)")))
            return
        }
        var out: [SocketAddress] = []
        var p = res
        while let ai = p {
            if let sa = ai.pointee.ai_addr, var addr = SocketAddress(UnsafePointer(sa), length: Int(ai.pointee.ai_addrlen)) {
                addr.port = port
                out.append(addr)
            }
            p = ai.pointee.ai_next
        }
        evutil_freeaddrinfo(res)
        if out.isEmpty {
            completion(.failure(IOError(.resolve, "\(host): no addresses")))
        } else {
            completion(.success(out))
        }
    }
}

private let resolverCallback: @convention(c) (Int32, UnsafeMutablePointer<addrinfo>?, UnsafeMutableRawPointer?) -> Void = { result, res, ctx in
    let req = Unmanaged<ResolveRequest>.fromOpaque(ctx!).takeRetainedValue()
    req.finish(result, res)
}
