import AirlockSecurity
extension AirlockConfig {
    /// The effective configuration as YAML that `load(yaml:)` reads back to
    /// an equal value. `workers: auto` says what it resolves to in a comment.
    public func renderYAML() -> String {
        var lines: [String] = [
            "listen: \(Self.yamlScalar(listen.description))",
            workersSetting == .auto ? "workers: auto  # resolves to \(workers) on this machine" : "workers: \(workers)",
            "allow_open_proxy: \(allowOpenProxy)",
            "io_uring: \(ioUring.rawValue)",
            "limits:",
            "  request_line_bytes: \(limits.requestLineBytes)",
            "  header_bytes: \(limits.headerBytes)",
            "  header_count: \(limits.headerCount)",
            "  body_bytes: \(limits.bodyBytes)",
            "  header_timeout: \(ConfigSyntax.formatDuration(limits.headerTimeout))",
            "  idle_timeout: \(ConfigSyntax.formatDuration(limits.idleTimeout))",
            "  connect_timeout: \(ConfigSyntax.formatDuration(limits.connectTimeout))",
            "  upstream_timeout: \(ConfigSyntax.formatDuration(limits.upstreamTimeout))",
            "  drain_timeout: \(ConfigSyntax.formatDuration(limits.drainTimeout))",
            "  max_idle_per_upstream: \(limits.maxIdlePerUpstream)",
            "  max_connections: \(limits.maxConnections)",
            "  max_connections_per_upstream: \(limits.maxConnectionsPerUpstream)",
            "  upstream_queue: \(limits.upstreamQueue)",
            "  upstream_queue_timeout: \(ConfigSyntax.formatDuration(limits.upstreamQueueTimeout))",
            "  tunnel_idle_timeout: \(ConfigSyntax.formatDuration(limits.tunnelIdleTimeout))",
            "  splice: \(limits.splice)",
        ] + renderAdminYAML() + renderReachabilityYAML() + renderCAYAML() + [
            "routes:",
        ]
        for route in routes {
            lines.append("  - name: \(Self.yamlScalar(route.name))")
            lines.append("    match:")
            lines.append("      host: \(Self.yamlScalar(route.host.description))")
            if let prefix = route.pathPrefix {
                lines.append("      path_prefix: \(Self.yamlScalar(prefix))")
            }
            if let port = route.port { lines.append("      port: \(port)") }
            lines.append("    upstream: \(Self.yamlScalar(route.upstream.description))")
            lines.append("    connect: \(route.connect.rawValue)")
            lines.append("    connect_ports: [\(route.connectPorts.map(String.init).joined(separator: ", "))]")
            lines += renderEgressYAML(route)
            // Shown wherever it applies (an `origin` or `https://` upstream), defaults and all.
            var reachesTLS = true
            if case .fixed(let t) = route.upstream { reachesTLS = t.scheme == "https" }
            if route.security != .default || reachesTLS {
                let s = route.security
                lines.append("    security:")
                lines.append("      pinning: \(s.mode.rawValue)")
                if !s.pinTexts.isEmpty {
                    lines.append("      pins: [\(s.pinTexts.map { Self.yamlScalar($0) }.joined(separator: ", "))]")
                }
                if !s.certificatePaths.isEmpty {
                    lines.append("      certificates: [\(s.certificatePaths.map { Self.yamlScalar($0) }.joined(separator: ", "))]")
                }
                lines.append("      pin_scope: \(s.pinScope.rawValue)")
                lines.append("      allow_invalid_certificates: \(s.allowInvalidCertificates)")
                lines.append("      validates_domain_name: \(s.validatesDomainName)")
                lines.append("      min_security_level: \(s.minimumSecurityLevel)")
                if let ca = s.caFiles.first, s.caFiles.count == 1 {
                    lines.append("      ca: \(Self.yamlScalar(ca))")
                }
            }
            if let request = route.request { lines += Self.renderRequestYAML(request) }
            if let response = route.response { lines += Self.renderResponseYAML(response) }
            lines += Self.renderDownloadsYAML(route)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Plain when unambiguous, otherwise double-quoted with escapes.
    static func yamlScalar(_ text: String) -> String {
        let plainSafe = !text.isEmpty
            && text.utf8.first.map { isAlphanumeric($0) || $0 == UInt8(ascii: "/") } == true
            && text.utf8.allSatisfy { isAlphanumeric($0) || "._-/:".utf8.contains($0) }
            && !text.contains(": ")
            && !["null", "true", "false", "yes", "no", "on", "off", "~"].contains(text.lowercased())
        if plainSafe { return text }
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                quoted += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16, uppercase: true)
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

extension AirlockConfig {
    /// The route's `egress:` lists, then a comment with the policy in force: what the listener
    /// and the upstream kind add to the lists (`RouteConfig.effectiveEgress`).
    func renderEgressYAML(_ route: RouteConfig) -> [String] {
        var lines: [String] = []
        if !route.egress.allow.isEmpty || !route.egress.deny.isEmpty {
            lines.append("    egress:")
            for (key, list) in [("allow", route.egress.allow), ("deny", route.egress.deny)] where !list.isEmpty {
                lines.append("      \(key): [\(list.map { Self.yamlScalar($0.description) }.joined(separator: ", "))]")
            }
        }
        let policy = route.effectiveEgress(listen: listen)
        var said: [String] = []
        if policy.denyInternal {
            let classes = SpecialRange.internalClasses.map(\.0.rawValue).joined(separator: ", ")
            said.append("denies \(classes) unless allowed (origin route on non-loopback listen \(listen))")
        } else if case .origin = route.upstream {
            said.append("allows internal addresses (loopback listen \(listen))")
        } else {
            said.append("allows internal addresses (fixed upstream)")
        }
        if !policy.deny.isEmpty { said.append("denies the deny list") }
        said.append("never dials 0.0.0.0/8 or ::")
        lines.append("    # egress in force: " + said.joined(separator: "; "))
        return lines
    }
}
