import AirlockYAML
import AirlockSecurity

/// Walks a composed YAML tree into an `AirlockConfig`, recording every
/// syntax and type problem at its key path instead of stopping at the first.
///
/// Fields that fail keep their default, and their key paths go into
/// `failedPaths` so cross-field validation does not pile spurious issues on
/// top of the real one.
struct ConfigReader {
    private(set) var issues: [ConfigError.Issue] = []
    private(set) var failedPaths: Set<String> = []
    /// Where `bearer_env` names are looked up.
    var environment: [String: String] = [:]

    static let topLevelKeys = [
        "listen", "workers", "allow_open_proxy", "limits", "routes", "admin", "admin_allow_remote", "admin_token", "rejects",
        "io_uring", "reachability", "ca",
    ]
    static let limitKeys = [
        "request_line_bytes", "header_bytes", "header_count", "body_bytes",
        "header_timeout", "idle_timeout", "connect_timeout", "upstream_timeout", "drain_timeout",
        "max_idle_per_upstream", "max_connections",
        "max_connections_per_upstream", "upstream_queue", "upstream_queue_timeout", "tunnel_idle_timeout",
        "splice",
    ]
    static let routeKeys = [
        "name", "match", "upstream", "connect", "connect_ports", "egress", "security", "request", "response",
        "resume", "cache",
    ]
    static let egressKeys = ["allow", "deny"]
    static let matchKeys = ["host", "path_prefix", "port"]
    /// Route keys later releases will give a meaning; refused until then.
    static let reservedRouteKeys: Set<String> = []

    mutating func readConfig(_ root: Node?) -> AirlockConfig {
        var config = AirlockConfig.embeddedDefault
        config.routes = []
        guard let root, !root.isNull else {
            fail("routes", "at least one route is required (the document is empty)")
            return config
        }
        guard let fields = mapping(root, at: "", allowed: Self.topLevelKeys) else {
            failedPaths.insert("routes")
            return config
        }

        if let node = fields["listen"], let text = scalar(node, at: "listen") {
            switch ListenAddress.parse(text) {
            case .success(let address): config.listen = address
            case .failure(let error): fail("listen", error.message)
            }
        }
        if let node = fields["workers"], let text = scalar(node, at: "workers") {
            if text == "auto" {
                config.setWorkersAuto()
            } else if let count = ConfigSyntax.parseCount(text) {
                config.workers = count
            } else {
                fail("workers", "expected \"auto\" or an integer 1...\(AirlockConfig.maxWorkers), got \"\(text)\"")
            }
        }
        if let node = fields["allow_open_proxy"], let text = scalar(node, at: "allow_open_proxy") {
            switch text.lowercased() {
            case "true": config.allowOpenProxy = true
            case "false": config.allowOpenProxy = false
            default: fail("allow_open_proxy", "expected true or false, got \"\(text)\"")
            }
        }
        if let node = fields["io_uring"], let text = scalar(node, at: "io_uring") {
            if let mode = AirlockConfig.IOUringMode(rawValue: text) {
                config.ioUring = mode
            } else {
                fail("io_uring", "expected auto or off, got \"\(text)\"")
            }
        }
        if let node = fields["limits"] {
            config.limits = readLimits(node)
        }
        if let node = fields["routes"] {
            config.routes = readRoutes(node)
        } else {
            fail("routes", "at least one route is required")
        }
        readAdmin(fields, into: &config)
        readReachability(fields, into: &config)
        readCA(fields, into: &config)
        return config
    }

    private mutating func readLimits(_ node: Node) -> LimitsConfig {
        var limits = LimitsConfig()
        guard let fields = mapping(node, at: "limits", allowed: Self.limitKeys) else { return limits }
        readSize(fields, "request_line_bytes") { limits.requestLineBytes = Int($0) }
        readSize(fields, "header_bytes") { limits.headerBytes = Int($0) }
        readCount(fields, "header_count") { limits.headerCount = $0 }
        readSize(fields, "body_bytes") { limits.bodyBytes = $0 }
        readDuration(fields, "header_timeout") { limits.headerTimeout = $0 }
        readDuration(fields, "idle_timeout") { limits.idleTimeout = $0 }
        readDuration(fields, "connect_timeout") { limits.connectTimeout = $0 }
        readDuration(fields, "upstream_timeout") { limits.upstreamTimeout = $0 }
        readDuration(fields, "drain_timeout") { limits.drainTimeout = $0 }
        readCount(fields, "max_idle_per_upstream") { limits.maxIdlePerUpstream = $0 }
        readCount(fields, "max_connections_per_upstream") { limits.maxConnectionsPerUpstream = $0 }
        readCount(fields, "upstream_queue") { limits.upstreamQueue = $0 }
        readDuration(fields, "upstream_queue_timeout") { limits.upstreamQueueTimeout = $0 }
        readDuration(fields, "tunnel_idle_timeout") { limits.tunnelIdleTimeout = $0 }
        if let node = fields["splice"], let flag = readBool(node, at: "limits.splice") { limits.splice = flag }
        readCount(fields, "max_connections") {
            limits.maxConnections = $0
            limits.maxConnectionsSetExplicitly = true
        }
        return limits
    }

    private mutating func readRoutes(_ node: Node) -> [RouteConfig] {
        guard !node.isNull else {
            fail("routes", "at least one route is required")
            return []
        }
        guard case .sequence(let items) = node else {
            fail("routes", "expected a list of routes")
            return []
        }
        return items.enumerated().map { readRoute($1, at: "routes[\($0)]") }
    }

    /// Always returns a route, so indices stay aligned with the file; parts
    /// that failed are placeholders listed in `failedPaths`.
    private mutating func readRoute(_ node: Node, at path: String) -> RouteConfig {
        var route = RouteConfig(name: "", host: .exact(""), upstream: .origin)
        guard let fields = mapping(node, at: path, allowed: Self.routeKeys, reserved: Self.reservedRouteKeys) else {
            failedPaths.insert(path)
            return route
        }
        if let node = fields["name"], let name = scalar(node, at: path + ".name") {
            route.name = name
        } else if fields["name"] == nil {
            fail(path + ".name", "required")
        }
        readMatch(fields["match"], into: &route, at: path + ".match")
        if let node = fields["upstream"], let text = scalar(node, at: path + ".upstream") {
            if text == "origin" {
                route.upstream = .origin
            } else {
                switch UpstreamTarget.parse(text) {
                case .success(let target): route.upstream = .fixed(target)
                case .failure(let error): fail(path + ".upstream", error.message)
                }
            }
        } else if fields["upstream"] == nil {
            fail(path + ".upstream", "required: \"origin\" or an http(s) URL")
        }
        readConnect(fields, into: &route, at: path)
        if let node = fields["egress"] { readEgress(node, into: &route, at: path + ".egress") }
        if let node = fields["security"] {
            if let security = readSecurity(node, at: path + ".security") {
                route.security = security
                if case .fixed(let t) = route.upstream, t.scheme == "http", security.mode != .none {
                    fail(path + ".security.pinning", "pinning needs a TLS upstream; \(t) is plain http")
                }
            } else {
                failedPaths.insert(path + ".security")
            }
        }
        if let node = fields["request"] {
            route.request = readRequest(node, at: path + ".request")
        }
        if let node = fields["response"] {
            route.response = readResponse(node, at: path + ".response")
        }
        if let node = fields["resume"], let resume = readResume(node, at: path + ".resume") { route.resume = resume }
        if let node = fields["cache"] { route.cache = readCache(node, at: path + ".cache") }
        return route
    }

    private mutating func readMatch(_ node: Node?, into route: inout RouteConfig, at path: String) {
        guard let node else {
            fail(path, "required, e.g. { host: \"*\" }")
            failedPaths.insert(path + ".host")
            return
        }
        guard let fields = mapping(node, at: path, allowed: Self.matchKeys) else {
            failedPaths.insert(path + ".host")
            return
        }
        if let node = fields["host"], let text = scalar(node, at: path + ".host") {
            switch HostPattern.parse(text) {
            case .success(let pattern): route.host = pattern
            case .failure(let error): fail(path + ".host", error.message)
            }
        } else if fields["host"] == nil {
            fail(path + ".host", "required: an exact host, \"*.suffix\" or \"*\"")
        }
        if let node = fields["path_prefix"], let text = scalar(node, at: path + ".path_prefix") {
            route.pathPrefix = text
        }
        if let node = fields["port"], let text = scalar(node, at: path + ".port") {
            if let port = Self.port(text) {
                route.port = port
            } else {
                fail(path + ".port", "expected a port 1...65535, got \"\(text)\"")
            }
        }
    }

    /// `connect:` (deny | tunnel | intercept) and `connect_ports:` (a list of ports 1...65535).
    private mutating func readConnect(_ fields: [String: Node], into route: inout RouteConfig, at path: String) {
        if let node = fields["connect"], let text = scalar(node, at: path + ".connect") {
            if let policy = ConnectPolicy(rawValue: text) {
                route.connect = policy
            } else {
                let names = ConnectPolicy.allCases.map(\.rawValue).joined(separator: ", ")
                fail(path + ".connect", "expected one of \(names), got \"\(text)\"")
            }
        }
        guard let node = fields["connect_ports"] else { return }
        let key = path + ".connect_ports"
        let items: [Node]
        switch node {
        case .sequence(let list): items = Array(list)
        case .scalar: items = [node]
        default:
            fail(key, "expected a list of ports 1...65535, e.g. [443, 8443]")
            return
        }
        var ports: [UInt16] = []
        for (i, item) in items.enumerated() {
            guard let text = scalar(item, at: "\(key)[\(i)]") else { continue }
            guard let port = Self.port(text) else {
                fail(key, "each port must be an integer 1...65535, got \"\(text)\"")
                return
            }
            if !ports.contains(port) { ports.append(port) }
        }
        if ports.isEmpty, !failedPaths.contains(where: { $0.hasPrefix(key) }) {
            fail(key, "must list at least one port 1...65535 (leave it out for the default [443])")
            return
        }
        route.connectPorts = ports
    }

    /// `egress: { allow: [CIDR...], deny: [CIDR...] }`: each entry an address or range,
    /// IPv4 or IPv6 (`EgressPolicy`).
    private mutating func readEgress(_ node: Node, into route: inout RouteConfig, at path: String) {
        guard let fields = mapping(node, at: path, allowed: Self.egressKeys) else { return }
        for key in Self.egressKeys {
            guard let list = fields[key] else { continue }
            let keyPath = path + "." + key
            let items: [Node]
            switch list {
            case .sequence(let seq): items = Array(seq)
            case .scalar where !list.isNull: items = [list]
            default:
                fail(keyPath, "expected a list of addresses or ranges, e.g. [10.0.0.0/8, \"fd00::/8\"]")
                continue
            }
            var ranges: [CIDR] = []
            for (i, item) in items.enumerated() {
                guard let text = scalar(item, at: "\(keyPath)[\(i)]") else { continue }
                do {
                    ranges.append(try CIDR(parsing: text))
                } catch {
                    fail("\(keyPath)[\(i)]", error.message)
                }
            }
            if key == "allow" { route.egress.allow = ranges } else { route.egress.deny = ranges }
        }
    }

    /// 1–5 digits, 1...65535.
    static func port(_ text: String) -> UInt16? {
        guard let p = HostSyntax.parsePort(text), p != 0 else { return nil }
        return p
    }

    // MARK: - Typed scalars

    private mutating func readSize(_ fields: [String: Node], _ key: String, _ store: (Int64) -> Void) {
        readLimit(fields, key, expected: "a size in bytes, e.g. 65536, 64KiB, 1MiB or 1GiB", store) { text in
            ConfigSyntax.parseSize(text).flatMap { $0 <= Int64(Int32.max) || key == "body_bytes" ? $0 : nil }
        }
    }

    private mutating func readCount(_ fields: [String: Node], _ key: String, _ store: (Int) -> Void) {
        readLimit(fields, key, expected: "a non-negative integer", store, parse: ConfigSyntax.parseCount)
    }

    private mutating func readDuration(_ fields: [String: Node], _ key: String, _ store: (Duration) -> Void) {
        readLimit(fields, key, expected: "a duration such as 500ms, 10s, 2m or 1h (a bare integer is seconds)", store,
                  parse: ConfigSyntax.parseDuration)
    }

    /// `limits.<key>` when present: stored when `parse` reads it, an issue naming the key and
    /// what was `expected` otherwise.
    private mutating func readLimit<T>(_ fields: [String: Node], _ key: String, expected: String, _ store: (T) -> Void,
                                       parse: (String) -> T?) {
        let path = "limits." + key
        guard let node = fields[key], let text = scalar(node, at: path) else { return }
        if let value = parse(text) {
            store(value)
        } else {
            fail(path, "expected \(expected), got \"\(text)\"")
        }
    }

    // MARK: - Nodes

    /// The mapping's values by key, after reporting unknown, reserved,
    /// duplicate and non-string keys. Nil (and an issue) if `node` is not a mapping.
    mutating func mapping(
        _ node: Node, at path: String, allowed: [String], reserved: Set<String> = []
    ) -> [String: Node]? {
        guard case .mapping(let pairs) = node else {
            fail(path, "expected a mapping of keys to values, got \(Self.kind(of: node))")
            return nil
        }
        var fields: [String: Node] = [:]
        for (keyNode, value) in pairs {
            guard case .scalar(let keyScalar) = keyNode else {
                fail(path, "keys must be plain strings")
                continue
            }
            let key = keyScalar.string
            let keyPath = path.isEmpty ? key : "\(path).\(key)"
            if reserved.contains(key) {
                fail(keyPath, "unknown key \"\(key)\" (reserved for a later release, not supported yet)")
            } else if !allowed.contains(key) {
                fail(keyPath, "unknown key \"\(key)\"\(Self.suggestion(for: key, among: allowed))")
            } else if fields[key] != nil {
                fail(keyPath, "duplicate key")
            } else {
                fields[key] = value
            }
        }
        return fields
    }

    /// The scalar's text; nil and an issue for null, lists and mappings.
    mutating func scalar(_ node: Node, at path: String) -> String? {
        guard case .scalar(let scalar) = node else {
            fail(path, "expected a single value, got \(Self.kind(of: node))")
            return nil
        }
        if node.isNull && scalar.style == .plain {
            fail(path, "a value is required")
            return nil
        }
        return scalar.string
    }

    mutating func fail(_ path: String, _ message: String) {
        issues.append(ConfigError.Issue(keyPath: path, message: message))
        failedPaths.insert(path)
    }

    static func kind(of node: Node) -> String {
        switch node {
        case .scalar: return node.isNull ? "nothing" : "a single value"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        }
    }

    /// `; did you mean "header_timeout"?` for keys within two edits of a known one.
    static func suggestion(for key: String, among known: [String]) -> String {
        let best = known.map { ($0, editDistance(key, $0)) }.min { $0.1 < $1.1 }
        guard let (candidate, distance) = best, distance <= 2 else { return "" }
        return "; did you mean \"\(candidate)\"?"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            previous = current
        }
        return previous[b.count]
    }
}
