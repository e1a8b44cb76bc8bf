import AirlockSerialization

extension AirlockConfig {
    /// A route's `request:` block with every key written out. Secrets are comments: a secret
    /// header's value and the credentials of `authorization` are never printed, so the rendered
    /// block loads back without them.
    static func renderRequestYAML(_ r: RequestSerializationConfig) -> [String] {
        var lines = ["    request:", "      serializer: \(r.serializer.rawValue)"]
        lines += renderHeaderFields("headers", r.headers)
        lines += renderHeaderFields("override_headers", r.overrideHeaders)
        if !r.removeHeaders.isEmpty {
            lines.append("      remove_headers: [\(r.removeHeaders.map(yamlScalar).joined(separator: ", "))]")
        }
        if !r.parameters.isEmpty {
            lines.append("      parameters: \(renderParameter(.dictionary(r.parameters)))")
        }
        if r.serializer != .passthrough {
            lines.append("      parameters_in_uri: [\(r.parametersInURI.sorted().map(yamlScalar).joined(separator: ", "))]")
        }
        if r.authorization != nil {
            lines.append("      # authorization: set (not shown)")
        }
        if let timeout = r.timeout {
            lines.append("      timeout: \(ConfigSyntax.formatDuration(timeout))")
        }
        if let throttle = r.throttle {
            lines.append("      throttle: { packet_bytes: \(throttle.packetBytes), delay: \(ConfigSyntax.formatDuration(throttle.delay)) }")
        }
        lines.append("      validate_multipart: \(r.validateMultipart)")
        return lines
    }

    /// Plain fields as a block mapping in their order; secret ones as comments without the value.
    private static func renderHeaderFields(_ key: String, _ fields: [RequestSerializationConfig.HeaderField]) -> [String] {
        var lines: [String] = []
        let shown = fields.filter { !$0.isSecret }
        if !shown.isEmpty {
            lines.append("      \(key):")
            lines += shown.map { "        \(yamlScalar($0.name)): \(yamlScalar($0.value))" }
        }
        lines += fields.filter(\.isSecret).map { "      # \(key).\($0.name): (secret, not shown)" }
        return lines
    }

    /// A parameter tree in YAML flow style; keys sorted, so the text is stable.
    static func renderParameter(_ value: ParameterValue) -> String {
        switch value {
        case .string(let text): yamlScalar(text)
        case .null: "null"
        case .array(let items): "[" + items.map(renderParameter).joined(separator: ", ") + "]"
        case .dictionary(let tree):
            "{" + tree.keys.sorted().map { "\(yamlScalar($0)): \(renderParameter(tree[$0]!))" }.joined(separator: ", ") + "}"
        }
    }
}
