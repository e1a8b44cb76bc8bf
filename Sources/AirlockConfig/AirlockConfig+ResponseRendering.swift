import AirlockSerialization

extension AirlockConfig {
    /// `admin`, `admin_allow_remote` and `rejects`, for `renderYAML`. A set `admin_token` is
    /// a comment: the secret is never printed.
    func renderAdminYAML() -> [String] {
        [
            "admin: \(admin.address.map { Self.yamlScalar($0.description) } ?? "off")",
            "admin_allow_remote: \(admin.allowRemote)",
        ] + (admin.token == nil ? [] : ["# admin_token: set (not shown)"]) + [
            "rejects:",
            "  keep: \(rejects.keep)",
        ]
    }

    /// A route's `response:` block with every key written out.
    static func renderResponseYAML(_ r: ResponseValidationConfig) -> [String] {
        var lines = ["    response:", "      serializer: \(r.serializer.rawValue)"]
        if !r.serializers.isEmpty {
            lines.append("      serializers: [\(r.serializers.map(\.rawValue).joined(separator: ", "))]")
        }
        let codes = r.acceptableStatusCodes.ranges.map { range in
            range.count == 1 ? "\(range.lowerBound)" : "\"\(range.lowerBound)-\(range.upperBound)\""
        }
        lines.append("      acceptable_status_codes: [\(codes.joined(separator: ", "))]")
        if let types = r.acceptableContentTypes {
            lines.append("      acceptable_content_types: [\(types.sorted().map(yamlScalar).joined(separator: ", "))]")
        }
        lines += [
            "      removes_keys_with_null_values: \(r.removesKeysWithNullValues)",
            "      max_body_bytes: \(r.maxBodyBytes)",
            "      mode: \(r.mode.rawValue)",
            "      reject_status: \(r.rejectStatus)",
        ]
        return lines
    }
}
