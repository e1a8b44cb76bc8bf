import AirlockSerialization
import AirlockYAML

/// The `response:` block of a route, and the top-level `admin`, `admin_allow_remote` and
/// `rejects` keys.
extension ConfigReader {
    static let responseKeys = [
        "serializer", "serializers", "acceptable_status_codes", "acceptable_content_types",
        "removes_keys_with_null_values", "max_body_bytes", "mode", "reject_status",
    ]
    static let rejectsKeys = ["keep"]

    /// The validated block, or nil with every problem reported at `routes[i].response.<key>`.
    mutating func readResponse(_ node: Node, at path: String) -> ResponseValidationConfig? {
        guard let fields = mapping(node, at: path, allowed: Self.responseKeys) else { return nil }
        var parsedAll = true
        func key(_ name: String) -> String { path + "." + name }

        var serializer = SerializerKind.http
        if let node = fields["serializer"] {
            if let kind = readSerializer(node, at: key("serializer")) { serializer = kind } else { parsedAll = false }
        }
        var serializers: [SerializerKind] = []
        if let node = fields["serializers"] {
            if let items = list(node, at: key("serializers")) {
                for (index, item) in items.enumerated() {
                    if let kind = readSerializer(item, at: key("serializers[\(index)]")) {
                        serializers.append(kind)
                    } else {
                        parsedAll = false
                    }
                }
            } else {
                parsedAll = false
            }
        }
        var statusCodes = StatusCodeSet.success
        if let node = fields["acceptable_status_codes"] {
            if let texts = scalarList(node, at: key("acceptable_status_codes")) {
                do throws(ValidationConfigError) {
                    statusCodes = try StatusCodeSet(parsing: texts)
                } catch {
                    fail(key(error.key), error.message)
                    parsedAll = false
                }
            } else {
                parsedAll = false
            }
        }
        var contentTypes: Set<String>?
        if let node = fields["acceptable_content_types"] {
            if let texts = scalarList(node, at: key("acceptable_content_types")) {
                contentTypes = Set(texts)
            } else {
                parsedAll = false
            }
        }
        var removesNulls = false
        if let node = fields["removes_keys_with_null_values"] {
            if let flag = readBool(node, at: key("removes_keys_with_null_values")) { removesNulls = flag } else { parsedAll = false }
        }
        var maxBodyBytes = ResponseValidationConfig.defaultMaxBodyBytes
        if let node = fields["max_body_bytes"], let text = scalar(node, at: key("max_body_bytes")) {
            if let bytes = ConfigSyntax.parseSize(text), bytes <= Int64(Int32.max) {
                maxBodyBytes = Int(bytes)
            } else {
                fail(key("max_body_bytes"), "expected a size in bytes up to 2GiB, e.g. 4194304, 64KiB or 4MiB, got \"\(text)\"")
                parsedAll = false
            }
        } else if fields["max_body_bytes"] != nil {
            parsedAll = false
        }
        var mode = ValidationMode.enforce
        if let node = fields["mode"], let text = scalar(node, at: key("mode")) {
            if let parsed = ValidationMode(rawValue: text) {
                mode = parsed
            } else {
                fail(key("mode"), "expected enforce or report-only, got \"\(text)\"")
                parsedAll = false
            }
        } else if fields["mode"] != nil {
            parsedAll = false
        }
        var rejectStatus = ResponseValidationConfig.defaultRejectStatus
        if let node = fields["reject_status"], let text = scalar(node, at: key("reject_status")) {
            if let status = ConfigSyntax.parseCount(text), status <= 999 {
                rejectStatus = status
            } else {
                fail(key("reject_status"), "expected a status code within 400...599, got \"\(text)\"")
                parsedAll = false
            }
        } else if fields["reject_status"] != nil {
            parsedAll = false
        }

        guard parsedAll else { return nil }
        do throws(ValidationConfigError) {
            return try ResponseValidationConfig(
                serializer: serializer, serializers: serializers, acceptableStatusCodes: statusCodes,
                acceptableContentTypes: contentTypes, removesKeysWithNullValues: removesNulls,
                maxBodyBytes: maxBodyBytes, mode: mode, rejectStatus: rejectStatus)
        } catch {
            fail(key(error.key), error.message)
            return nil
        }
    }

    /// `admin`, `admin_allow_remote` and `rejects`; range rules run in validation.
    mutating func readAdmin(_ fields: [String: Node], into config: inout AirlockConfig) {
        if let node = fields["admin"], let text = scalar(node, at: "admin") {
            if text == "off" || text == "false" {
                config.admin.address = nil
            } else {
                switch ListenAddress.parse(text) {
                case .success(let address): config.admin.address = address
                case .failure(let error): fail("admin", error.message + " (or \"off\" to disable the admin listener)")
                }
            }
        }
        if let node = fields["admin_allow_remote"], let flag = readBool(node, at: "admin_allow_remote") {
            config.admin.allowRemote = flag
        }
        if let node = fields["admin_token"], let token = scalar(node, at: "admin_token") {
            config.admin.token = token
        }
        if let node = fields["rejects"], let sub = mapping(node, at: "rejects", allowed: Self.rejectsKeys),
           let keepNode = sub["keep"], let text = scalar(keepNode, at: "rejects.keep") {
            if let keep = ConfigSyntax.parseCount(text) {
                config.rejects.keep = keep
            } else {
                fail("rejects.keep", "expected a non-negative integer, got \"\(text)\"")
            }
        }
    }

    private mutating func readSerializer(_ node: Node, at path: String) -> SerializerKind? {
        guard let text = scalar(node, at: path) else { return nil }
        guard let kind = SerializerKind(rawValue: text) else {
            let names = SerializerKind.allCases.map(\.rawValue).joined(separator: ", ")
            fail(path, "expected one of \(names), got \"\(text)\"")
            return nil
        }
        return kind
    }

    mutating func readBool(_ node: Node, at path: String) -> Bool? {
        guard let text = scalar(node, at: path) else { return nil }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default:
            fail(path, "expected true or false, got \"\(text)\"")
            return nil
        }
    }

    /// A YAML list's items; nil and an issue for anything else.
    mutating func list(_ node: Node, at path: String) -> [Node]? {
        guard case .sequence(let items) = node else {
            fail(path, "expected a list, got \(Self.kind(of: node))")
            return nil
        }
        return Array(items)
    }

    /// A list of scalars (a single scalar counts as a list of one): `[200-299, 304]`.
    mutating func scalarList(_ node: Node, at path: String) -> [String]? {
        if case .scalar = node {
            return scalar(node, at: path).map { [$0] }
        }
        guard let items = list(node, at: path) else { return nil }
        var texts: [String] = []
        var ok = true
        for (index, item) in items.enumerated() {
            if let text = scalar(item, at: "\(path)[\(index)]") { texts.append(text) } else { ok = false }
        }
        return ok ? texts : nil
    }
}

extension AirlockConfig {
    /// `admin` must be loopback unless `admin_allow_remote`, and must not be the proxy's own
    /// address; `rejects.keep` is bounded.
    func adminValidationIssues(skipping failed: Set<String>) -> [ConfigError.Issue] {
        var issues: [ConfigError.Issue] = []
        if let address = admin.address, !failed.contains("admin") {
            if !address.isLoopback && !admin.allowRemote {
                issues.append(ConfigError.Issue(keyPath: "admin", message:
                    "admin address \(address) is not loopback: anyone who can reach it could read reject records "
                    + "(URLs, body samples); listen on 127.0.0.1 or set admin_allow_remote: true if that is really intended"))
            } else if !address.isLoopback && admin.token == nil && !failed.contains("admin_token") {
                issues.append(ConfigError.Issue(keyPath: "admin_token", message:
                    "a non-loopback admin address (\(address)) needs admin_token: every admin request must then carry "
                    + "Authorization: Bearer <token>"))
            }
            if address.port != 0, address == listen, !failed.contains("listen") {
                issues.append(ConfigError.Issue(keyPath: "admin", message:
                    "must not be the proxy listen address \(listen); the admin listener has its own socket"))
            }
        }
        if let token = admin.token, !failed.contains("admin_token") {
            if token.utf8.count < 16 {
                issues.append(ConfigError.Issue(keyPath: "admin_token", message:
                    "must be at least 16 characters (got \(token.utf8.count)); e.g. openssl rand -hex 24"))
            } else if !token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
                issues.append(ConfigError.Issue(keyPath: "admin_token",
                                                message: "must be printable ASCII without spaces (it travels in a header)"))
            }
        }
        if !failed.contains("rejects.keep"), !(0...RejectsConfig.maxKeep).contains(rejects.keep) {
            issues.append(ConfigError.Issue(keyPath: "rejects.keep",
                                            message: "must be 0...\(RejectsConfig.maxKeep), got \(rejects.keep)"))
        }
        return issues
    }
}
