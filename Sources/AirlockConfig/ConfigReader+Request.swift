import AirlockSerialization
import AirlockYAML

/// The `request:` block of a route (issue #13): typed and validated here, applied by the request
/// phase.
extension ConfigReader {
    static let requestKeys = [
        "serializer", "headers", "override_headers", "remove_headers", "parameters", "parameters_in_uri",
        "authorization", "timeout", "throttle", "validate_multipart",
    ]
    static let authorizationKeys = ["basic", "bearer_env"]
    static let basicKeys = ["username", "password"]
    static let throttleKeys = ["packet_bytes", "delay"]
    static let secretHeaderKeys = ["secret"]

    /// The validated block, or nil with every problem reported at `routes[i].request.<key>`.
    mutating func readRequest(_ node: Node, at path: String) -> RequestSerializationConfig? {
        guard let fields = mapping(node, at: path, allowed: Self.requestKeys) else { return nil }
        var parsedAll = true
        func key(_ name: String) -> String { path + "." + name }

        var serializer = RequestSerializerKind.http
        if let node = fields["serializer"] {
            if let text = scalar(node, at: key("serializer")) {
                if let kind = RequestSerializerKind(rawValue: text) {
                    serializer = kind
                } else {
                    let names = RequestSerializerKind.allCases.map(\.rawValue).joined(separator: ", ")
                    fail(key("serializer"), "expected one of \(names), got \"\(text)\"")
                    parsedAll = false
                }
            } else {
                parsedAll = false
            }
        }
        var headers: [RequestSerializationConfig.HeaderField] = []
        if let node = fields["headers"] {
            if let parsed = readHeaderFields(node, at: key("headers")) { headers = parsed } else { parsedAll = false }
        }
        var overrideHeaders: [RequestSerializationConfig.HeaderField] = []
        if let node = fields["override_headers"] {
            if let parsed = readHeaderFields(node, at: key("override_headers")) { overrideHeaders = parsed } else { parsedAll = false }
        }
        var removeHeaders: [String] = []
        if let node = fields["remove_headers"] {
            if let names = scalarList(node, at: key("remove_headers")) { removeHeaders = names } else { parsedAll = false }
        }
        var parameters: RequestParameters = [:]
        if let node = fields["parameters"] {
            switch readParameter(node, at: key("parameters")) {
            case .dictionary(let tree)?:
                parameters = tree
            case nil:
                parsedAll = false
            case .some:
                fail(key("parameters"), "expected a mapping of parameter names to values, got \(Self.kind(of: node))")
                parsedAll = false
            }
        }
        var parametersInURI = RequestSerializationConfig.defaultParametersInURI
        if let node = fields["parameters_in_uri"] {
            if serializer == .passthrough {
                fail(key("parameters_in_uri"), "has no effect with serializer: passthrough (its parameters always go to the query)")
                parsedAll = false
            } else if let methods = scalarList(node, at: key("parameters_in_uri")) {
                for (index, method) in methods.enumerated() where !RequestSerializationConfig.isToken(method) {
                    fail(key("parameters_in_uri[\(index)]"), "\"\(method)\" is not a method name (an RFC 9110 token)")
                    parsedAll = false
                }
                parametersInURI = Set(methods.map { $0.uppercased() })
            } else {
                parsedAll = false
            }
        }
        var authorization: RequestSerializationConfig.Authorization?
        if let node = fields["authorization"] {
            if let parsed = readAuthorization(node, at: key("authorization")) { authorization = parsed } else { parsedAll = false }
        }
        var timeout: Duration?
        if let node = fields["timeout"] {
            if let text = scalar(node, at: key("timeout")) {
                if let duration = Self.parseRequestDuration(text) {
                    timeout = duration
                } else {
                    fail(key("timeout"), "expected a duration greater than 0 such as 30s, 1.5s, 500ms or 2m, got \"\(text)\"")
                    parsedAll = false
                }
            } else {
                parsedAll = false
            }
        }
        var throttle: RequestSerializationConfig.Throttle?
        if let node = fields["throttle"] {
            if let parsed = readThrottle(node, at: key("throttle")) { throttle = parsed } else { parsedAll = false }
        }
        var validateMultipart = false
        if let node = fields["validate_multipart"] {
            if let flag = readBool(node, at: key("validate_multipart")) { validateMultipart = flag } else { parsedAll = false }
        }

        guard parsedAll else { return nil }
        do throws(RequestSerializationConfig.Problems) {
            return try RequestSerializationConfig(
                serializer: serializer, headers: headers, overrideHeaders: overrideHeaders, removeHeaders: removeHeaders,
                parameters: parameters, parametersInURI: parametersInURI, authorization: authorization,
                timeout: timeout, throttle: throttle, validateMultipart: validateMultipart)
        } catch {
            for problem in error.problems { fail(key(problem.key), problem.message) }
            return nil
        }
    }

    /// `{ Name: value, Other: { secret: value } }` in YAML order; nil after reporting problems.
    private mutating func readHeaderFields(_ node: Node, at path: String) -> [RequestSerializationConfig.HeaderField]? {
        guard case .mapping(let pairs) = node else {
            fail(path, "expected a mapping of field names to values, got \(Self.kind(of: node))")
            return nil
        }
        var fields: [RequestSerializationConfig.HeaderField] = []
        var ok = true
        for (nameNode, valueNode) in pairs {
            guard case .scalar(let nameScalar) = nameNode else {
                fail(path, "field names must be plain strings")
                ok = false
                continue
            }
            let name = nameScalar.string
            let fieldPath = path + "." + name
            if case .mapping = valueNode {
                guard let sub = mapping(valueNode, at: fieldPath, allowed: Self.secretHeaderKeys) else { ok = false; continue }
                guard let secretNode = sub["secret"] else {
                    fail(fieldPath, "expected a value or { secret: value }")
                    ok = false
                    continue
                }
                if let value = scalar(secretNode, at: fieldPath + ".secret") {
                    fields.append(.init(name: name, value: value, isSecret: true))
                } else {
                    ok = false
                }
            } else if let value = scalar(valueNode, at: fieldPath) {
                fields.append(.init(name: name, value: value))
            } else {
                ok = false
            }
        }
        return ok ? fields : nil
    }

    /// A parameter tree: mappings, lists, scalars (as text) and null. Nil after reporting.
    private mutating func readParameter(_ node: Node, at path: String) -> ParameterValue? {
        switch node {
        case .scalar(let scalar):
            return node.isNull && scalar.style == .plain ? .null : .string(scalar.string)
        case .sequence(let items):
            var values: [ParameterValue] = []
            var ok = true
            for (index, item) in items.enumerated() {
                if let value = readParameter(item, at: "\(path)[\(index)]") { values.append(value) } else { ok = false }
            }
            return ok ? .array(values) : nil
        case .mapping(let pairs):
            var values: [String: ParameterValue] = [:]
            var ok = true
            for (keyNode, valueNode) in pairs {
                guard case .scalar(let keyScalar) = keyNode else {
                    fail(path, "parameter names must be plain strings")
                    ok = false
                    continue
                }
                let name = keyScalar.string
                if values[name] != nil {
                    fail(path + "." + name, "duplicate key")
                    ok = false
                } else if let value = readParameter(valueNode, at: path + "." + name) {
                    values[name] = value
                } else {
                    ok = false
                }
            }
            return ok ? .dictionary(values) : nil
        }
    }

    /// `{ basic: { username, password } }` or `{ bearer_env: NAME }`, the token read now.
    private mutating func readAuthorization(_ node: Node, at path: String) -> RequestSerializationConfig.Authorization? {
        guard let fields = mapping(node, at: path, allowed: Self.authorizationKeys) else { return nil }
        switch (fields["basic"], fields["bearer_env"]) {
        case (nil, nil):
            // An unknown key (a typo of one of the two) already has its issue.
            if !failedPaths.contains(where: { $0.hasPrefix(path + ".") }) {
                fail(path, "expected { basic: { username: ..., password: ... } } or { bearer_env: VARIABLE }")
            }
            return nil
        case (.some, .some):
            fail(path, "basic and bearer_env are exclusive: set one")
            return nil
        case (let basic?, nil):
            guard let sub = mapping(basic, at: path + ".basic", allowed: Self.basicKeys) else { return nil }
            guard let userNode = sub["username"] else {
                fail(path + ".basic.username", "required")
                return nil
            }
            guard let username = scalar(userNode, at: path + ".basic.username") else { return nil }
            var password = ""
            if let passwordNode = sub["password"] {
                guard let text = scalar(passwordNode, at: path + ".basic.password") else { return nil }
                password = text
            }
            return .basic(username: username, password: password)
        case (nil, let bearer?):
            guard let name = scalar(bearer, at: path + ".bearer_env") else { return nil }
            guard let token = environment[name], !token.isEmpty else {
                fail(path + ".bearer_env", "environment variable \(name) is \(environment[name] == nil ? "not set" : "empty")")
                return nil
            }
            return .bearer(token: token)
        }
    }

    /// `{ packet_bytes: 16384, delay: 0.2s }`, both required; ranges are checked by the config.
    private mutating func readThrottle(_ node: Node, at path: String) -> RequestSerializationConfig.Throttle? {
        guard let fields = mapping(node, at: path, allowed: Self.throttleKeys) else { return nil }
        var packetBytes: Int?
        if let node = fields["packet_bytes"], let text = scalar(node, at: path + ".packet_bytes") {
            if let bytes = ConfigSyntax.parseSize(text), bytes <= Int64(Int32.max) {
                packetBytes = Int(bytes)
            } else {
                fail(path + ".packet_bytes", "expected a size in bytes up to 16MiB, e.g. 16384 or 16KiB, got \"\(text)\"")
            }
        } else if fields["packet_bytes"] == nil {
            fail(path + ".packet_bytes", "required, e.g. 16384 or 16KiB")
        }
        var delay: Duration?
        if let node = fields["delay"], let text = scalar(node, at: path + ".delay") {
            if let duration = Self.parseRequestDuration(text) {
                delay = duration
            } else {
                fail(path + ".delay", "expected a duration within 0...60s such as 0.2s or 200ms, got \"\(text)\"")
            }
        } else if fields["delay"] == nil {
            fail(path + ".delay", "required, e.g. 0.2s or 200ms")
        }
        guard let packetBytes, let delay else { return nil }
        return .init(packetBytes: packetBytes, delay: delay)
    }

    /// `ConfigSyntax.parseDuration`, plus decimal seconds to the millisecond (`0.2s`, `1.5s`) as
    /// AFNetworking's `NSTimeInterval`s are written.
    static func parseRequestDuration(_ text: String) -> Duration? {
        guard text.hasSuffix("s"), !text.hasSuffix("ms"), let dot = text.firstIndex(of: ".") else {
            return ConfigSyntax.parseDuration(text)
        }
        let whole = text[..<dot], fraction = text[text.index(after: dot)..<text.index(before: text.endIndex)]
        guard !whole.isEmpty, (1...3).contains(fraction.count),
              whole.allSatisfy({ ("0"..."9").contains($0) }), fraction.allSatisfy({ ("0"..."9").contains($0) }),
              let seconds = ConfigSyntax.parseDuration(String(whole) + "s"),
              let milliseconds = Int64(fraction + String(repeating: "0", count: 3 - fraction.count))
        else { return nil }
        return seconds + .milliseconds(milliseconds)
    }
}
