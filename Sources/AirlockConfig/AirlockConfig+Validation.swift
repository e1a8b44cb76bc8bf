import AirlockSerialization

extension AirlockConfig {
    /// Checks value ranges and cross-field rules on a typed config: what
    /// `load` applies after parsing, and what code must call after changing a
    /// loaded config (e.g. the CLI's `--listen`, which can turn a safe config
    /// into an open proxy). Throws `ConfigError` listing every problem.
    public func validate() throws {
        let issues = validationIssues(skipping: [])
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
    }

    /// Every rule violated, in file order. Key paths in `failed` already have
    /// an issue from parsing; rules that read them are skipped.
    func validationIssues(skipping failed: Set<String>) -> [ConfigError.Issue] {
        var issues: [ConfigError.Issue] = []
        func report(_ path: String, _ message: String) {
            issues.append(ConfigError.Issue(keyPath: path, message: message))
        }
        func ok(_ paths: String...) -> Bool { paths.allSatisfy { !failed.contains($0) } }

        if ok("workers"), !(1...Self.maxWorkers).contains(workers) {
            report("workers", "must be \"auto\" or an integer 1...\(Self.maxWorkers), got \(workers)")
        }
        issues += limits.validationIssues(skipping: failed)
        if ok("limits.max_connections_per_upstream", "workers"), limits.maxConnectionsPerUpstream > 0,
           limits.maxConnectionsPerUpstream < workers {
            report("limits.max_connections_per_upstream",
                   "(\(limits.maxConnectionsPerUpstream)) must be 0 (unlimited) or at least workers (\(workers)): "
                   + "each worker thread enforces its share of the cap")
        }
        issues += adminValidationIssues(skipping: failed)
        issues += reachabilityValidationIssues(skipping: failed)

        if routes.isEmpty, ok("routes") {
            report("routes", "at least one route is required")
        }
        var seenNames: [String: Int] = [:]
        for (index, route) in routes.enumerated() {
            let path = "routes[\(index)]"
            guard ok(path) else { continue }
            if ok(path + ".name") {
                if route.name.isEmpty {
                    report(path + ".name", "must not be empty")
                } else if !Self.isValidRouteName(route.name) {
                    report(path + ".name", "\"\(route.name)\" must be 1-64 characters of A-Z a-z 0-9 . _ - (it is used as a metric label)")
                } else if let first = seenNames[route.name] {
                    report(path + ".name", "duplicate route name \"\(route.name)\" (also routes[\(first)])")
                } else {
                    seenNames[route.name] = index
                }
            }
            if ok(path + ".match.path_prefix"), let prefix = route.pathPrefix {
                if !prefix.hasPrefix("/") {
                    report(path + ".match.path_prefix", "must start with \"/\", got \"\(prefix)\"")
                } else if prefix.contains(where: { $0 == "?" || $0 == "#" || $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }) {
                    report(path + ".match.path_prefix", "must be a plain path without spaces, control characters, \"?\" or \"#\"")
                }
            }
            if route.connect == .intercept, ok(path + ".connect") {
                // Interception presents certificates signed by the local CA: without one there
                // is nothing to present, and the upstream leg must stay TLS (no downgrade).
                if ca == nil {
                    report(path + ".connect", "intercept needs the local CA: add a top-level ca: block "
                        + "(certificate, key; `airlock ca init` makes one)")
                } else if ok(path + ".upstream"), case .fixed(let t) = route.upstream, t.scheme != "https" {
                    report(path + ".upstream", "intercept with a fixed upstream needs an https:// URL: \(t) would send "
                        + "what the client encrypted to an upstream in plain http")
                }
            }
            if route.connect == .tunnel, ok(path + ".connect", path + ".upstream"), case .fixed(let t) = route.upstream,
               t.scheme != "https" {
                report(path + ".connect", "tunnel with a fixed upstream needs an https:// URL (the tunnel goes to its "
                    + "host and port); \(t) is plain http. Use upstream: origin to tunnel to the CONNECT target")
            }
            if let request = route.request, ok(path + ".request") {
                // Accepted by the reader, but what the request phase does not do yet is refused
                // here (fail closed): a key that is silently ignored would look like protection.
                let notYet = " is not supported yet (issue #13)"
                if request.throttle != nil, request.validateMultipart, ok(path + ".request.throttle") {
                    report(path + ".request.throttle", "throttle together with validate_multipart" + notYet)
                }
            }
            if !allowOpenProxy, !listen.isLoopback, ok("listen", path + ".match", path + ".match.host", path + ".upstream"),
               route.host == .any, route.upstream == .origin {
                report(path + ".match.host", "host \"*\" with upstream \"origin\" on non-loopback listen address \(listen) "
                    + "would be an open proxy for anyone who can reach it; narrow the host, listen on loopback, "
                    + "or set allow_open_proxy: true if that is really intended")
            }
        }
        return issues
    }

    public static func isValidRouteName(_ name: String) -> Bool {
        name.utf8.count <= 64 && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }
}

extension LimitsConfig {
    /// Range and consistency rules, at `limits.<key>` paths.
    func validationIssues(skipping failed: Set<String>) -> [ConfigError.Issue] {
        var issues: [ConfigError.Issue] = []
        func check(_ key: String, _ condition: Bool, _ message: @autoclosure () -> String) {
            let path = "limits." + key
            if !failed.contains(path), !condition {
                issues.append(ConfigError.Issue(keyPath: path, message: message()))
            }
        }
        func ok(_ keys: String...) -> Bool { keys.allSatisfy { !failed.contains("limits." + $0) } }

        check("request_line_bytes", requestLineBytes >= 16, "must be at least 16 bytes, got \(requestLineBytes)")
        check("header_bytes", headerBytes > 0, "must be positive, got \(headerBytes)")
        if ok("header_bytes", "request_line_bytes"), requestLineBytes >= 16, headerBytes > 0 {
            check("header_bytes", headerBytes >= requestLineBytes,
                  "(\(headerBytes)) must be at least request_line_bytes (\(requestLineBytes)): the head includes the request line")
        }
        check("header_count", headerCount > 0, "must be positive, got \(headerCount)")
        check("body_bytes", bodyBytes > 0, "must be positive, got \(bodyBytes)")
        let durations: [(String, Duration)] = [
            ("header_timeout", headerTimeout), ("idle_timeout", idleTimeout), ("connect_timeout", connectTimeout),
            ("upstream_timeout", upstreamTimeout), ("drain_timeout", drainTimeout),
            ("upstream_queue_timeout", upstreamQueueTimeout), ("tunnel_idle_timeout", tunnelIdleTimeout),
        ]
        for (key, value) in durations {
            check(key, value > .zero, "must be greater than 0")
        }
        check("max_idle_per_upstream", maxIdlePerUpstream >= 0, "must not be negative, got \(maxIdlePerUpstream)")
        check("max_connections", maxConnections > 0, "must be positive, got \(maxConnections)")
        check("upstream_queue", upstreamQueue <= Self.maxUpstreamQueue,
              "must be 0...\(Self.maxUpstreamQueue), got \(upstreamQueue)")
        return issues
    }
}
